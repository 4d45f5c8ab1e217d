export { runPlugin, servePlugin, type PluginContext, type PluginFactory, type PluginIo, type PluginServer } from './serve';
export { RemoteStore } from './remote-store';
