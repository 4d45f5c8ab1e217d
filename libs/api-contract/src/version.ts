/** The build's version: reported by seal-status and health, and by `svc version`. */
export const VERSION = '0.1.0';
export const BUILD_DATE = '2026-11-21T00:00:00Z';
