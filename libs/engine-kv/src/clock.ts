/** Where handlers get the time, so tests can move it (version expiry) without waiting. */
export type Clock = () => Date;

export const systemClock: Clock = () => new Date();
