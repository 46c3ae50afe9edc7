package io.pgjobs.server.events;

/**
 * Where {@link EventHub} writes one subscriber's events: a Server-Sent Events response or a WebSocket
 * subscription. Calls come from the subscriber's own thread, one at a time (except {@link #close()}).
 */
public interface EventSink {
  /**
   * Sends one event.
   *
   * @param event {@code snapshot}, {@code state}, {@code progress} or {@code resync}
   * @param data the event's data (a record the API's JSON mapper writes)
   * @param id the event id ({@code state} and {@code progress}), or null
   */
  void send(String event, Object data, String id);

  /** Keeps an idle connection open and finds out whether it is still there. */
  void ping();

  /**
   * Whether {@link #ping()} should be called every ping interval (default true); false for a
   * connection that pings by itself, so an idle subscription costs no writer thread.
   */
  default boolean wantsPings() {
    return true;
  }

  /** True once the connection is gone; the subscription then ends. */
  boolean isClosed();

  /**
   * Ends the connection; called when the subscription ends for any reason, and for a subscriber that
   * fell behind also at once from another thread (its writer may be stuck in {@link #send}), so it must
   * be safe to call twice and concurrently with a write.
   */
  void close();
}
