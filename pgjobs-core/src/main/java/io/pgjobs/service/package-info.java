/**
 * The one lifecycle of pgjobs' background loops ({@link io.pgjobs.service.BackgroundService}: start,
 * stop, await stopped within a deadline) and the ordered group that starts them in order and stops them
 * in reverse ({@link io.pgjobs.service.ServiceGroup}).
 */
package io.pgjobs.service;
