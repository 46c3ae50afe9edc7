package io.pgjobs.server.events;

/**
 * How much the live event endpoints ({@code /events}, {@code /ws}) may hold at once. A connection is
 * one {@code /events} stream or one {@code /ws} socket; a subscription is one {@code /events} stream,
 * one job a socket follows or a socket's {@code events} stream. Per-token limits apply when the server
 * has tokens (a connection counts against its token from the moment it authenticates). Over a limit,
 * {@code /events} answers 429 and {@code /ws} closes (code {@value #CLOSE_TRY_AGAIN_LATER}) or answers
 * an {@code error} message, each with the reason.
 *
 * @param maxConnections open connections per server
 * @param maxConnectionsPerToken open connections per token
 * @param maxSubscriptions subscriptions per server
 * @param maxSubscriptionsPerConnection subscriptions per {@code /ws} connection
 * @param maxSubscriptionsPerToken subscriptions per token
 * @param queueCapacity events a subscriber may fall behind before it is disconnected (its queue grows
 *     with what is waiting, up to this many)
 */
public record EventLimits(
    int maxConnections,
    int maxConnectionsPerToken,
    int maxSubscriptions,
    int maxSubscriptionsPerConnection,
    int maxSubscriptionsPerToken,
    int queueCapacity) {
  /** The WebSocket close code for a connection refused by a limit ("Try Again Later"): {@value}. */
  public static final int CLOSE_TRY_AGAIN_LATER = 1013;

  /**
   * The defaults: 1,000 connections (100 per token), 20,000 subscriptions (1,000 per connection, 5,000
   * per token), 1,000 events of backlog per subscriber.
   */
  public static final EventLimits DEFAULTS =
      new EventLimits(1_000, 100, 20_000, 1_000, 5_000, 1_000);

  private static final int MAX = 10_000_000;

  /**
   * Checks every limit.
   *
   * @throws IllegalArgumentException naming the limit, its value and what is allowed
   */
  public EventLimits {
    check("maxConnections", maxConnections);
    check("maxConnectionsPerToken", maxConnectionsPerToken);
    check("maxSubscriptions", maxSubscriptions);
    check("maxSubscriptionsPerConnection", maxSubscriptionsPerConnection);
    check("maxSubscriptionsPerToken", maxSubscriptionsPerToken);
    check("queueCapacity", queueCapacity);
  }

  private static void check(String name, int value) {
    if (value < 1 || value > MAX) {
      throw new IllegalArgumentException(
          "live events " + name + " must be between 1 and " + MAX + ", was " + value);
    }
  }

  /** These limits with {@code maxConnections} and {@code maxConnectionsPerToken} changed. */
  public EventLimits withConnections(int maxConnections, int maxConnectionsPerToken) {
    return new EventLimits(
        maxConnections,
        maxConnectionsPerToken,
        maxSubscriptions,
        maxSubscriptionsPerConnection,
        maxSubscriptionsPerToken,
        queueCapacity);
  }

  /** These limits with the three subscription limits changed. */
  public EventLimits withSubscriptions(
      int maxSubscriptions, int maxSubscriptionsPerConnection, int maxSubscriptionsPerToken) {
    return new EventLimits(
        maxConnections,
        maxConnectionsPerToken,
        maxSubscriptions,
        maxSubscriptionsPerConnection,
        maxSubscriptionsPerToken,
        queueCapacity);
  }

  /** These limits with {@code queueCapacity} changed. */
  public EventLimits withQueueCapacity(int queueCapacity) {
    return new EventLimits(
        maxConnections,
        maxConnectionsPerToken,
        maxSubscriptions,
        maxSubscriptionsPerConnection,
        maxSubscriptionsPerToken,
        queueCapacity);
  }
}
