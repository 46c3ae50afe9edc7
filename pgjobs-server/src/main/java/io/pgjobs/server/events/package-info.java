/**
 * INTERNAL. The live event stream: {@link io.pgjobs.server.events.EventHub} fans the events of one
 * {@link io.pgjobs.events.JobEventListener} out to Server-Sent Events subscribers.
 */
package io.pgjobs.server.events;
