export { API_DEADLINE_MS, kubernetesBackendFactory, kubernetesBackendFactoryWith, kubernetesDeclaration, type KubernetesAuthOptions } from './backend';
export { ALIAS_METADATA_ANNOTATION, SERVICE_ACCOUNT_DIR_ENV } from './api-server';
