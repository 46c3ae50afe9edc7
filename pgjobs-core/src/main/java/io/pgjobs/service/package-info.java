/**
 * The one lifecycle of pgjobs' background loops ({@link io.pgjobs.service.BackgroundService}: start,
 * stop, await stopped within a deadline) and the ordered group that starts them in order and stops them
 * in reverse ({@link io.pgjobs.service.ServiceGroup}). Exported: modules built on core (the server's
 * event hub) implement the same contract.
 */
package io.pgjobs.service;
