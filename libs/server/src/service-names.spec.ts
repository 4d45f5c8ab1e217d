import { engineTypes, WORKER_SERVICES } from './engines';
import { ENGINE_SERVICES, WORKER_SERVICE_NAMES } from './service-names';

describe('service names', () => {
  it('are those of the engines and worker services this build runs', () => {
    expect(engineTypes.services().sort()).toEqual([...ENGINE_SERVICES]);
    expect(WORKER_SERVICES.map((worker) => worker.name).sort()).toEqual([...WORKER_SERVICE_NAMES]);
  });
});
