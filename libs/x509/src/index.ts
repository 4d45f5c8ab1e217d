export { loadX509, type X509 } from './x509';
