package io.pgjobs.server.api;

import io.javalin.http.Context;
import io.pgjobs.JobClient;
import io.pgjobs.JobState;
import io.pgjobs.MinuteStats;
import io.pgjobs.config.DurationText;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** {@code /stats}: jobs finished per minute (succeeded, failed, cancelled) by type and queue. */
public final class StatsApi {
  /** Window when none is asked for: 1 hour. */
  static final Duration DEFAULT_WINDOW = Duration.ofHours(1);

  private final JobClient client;

  /** Serves {@code client}'s statistics. */
  public StatsApi(JobClient client) {
    this.client = client;
  }

  /** Registers the route. */
  public void register(Routes routes) {
    routes.get("/stats", this::stats);
  }

  private Reply stats(Context ctx) {
    Duration window = QueryParams.duration(
        ctx, "window", DEFAULT_WINDOW, Duration.ofMinutes(1), Duration.ofDays(7));
    Instant to = Instant.now();
    Map<String, long[]> perMinute = new LinkedHashMap<>();
    Map<String, long[]> totals = new LinkedHashMap<>();
    Map<String, MinuteStats> firstOfKey = new LinkedHashMap<>();
    for (MinuteStats s : client.statsPerMinute(window)) {
      String minuteKey = s.minute() + "|" + s.type() + "|" + s.queue();
      String totalKey = s.type() + "|" + s.queue();
      firstOfKey.putIfAbsent(minuteKey, s);
      firstOfKey.putIfAbsent(totalKey, s);
      add(perMinute.computeIfAbsent(minuteKey, k -> new long[3]), s.state(), s.count());
      add(totals.computeIfAbsent(totalKey, k -> new long[3]), s.state(), s.count());
    }
    List<MinuteView> minutes = new ArrayList<>();
    perMinute.forEach((key, c) -> {
      MinuteStats s = firstOfKey.get(key);
      minutes.add(new MinuteView(s.minute(), s.type(), s.queue(), c[0], c[1], c[2]));
    });
    List<TotalView> totalViews = new ArrayList<>();
    totals.forEach((key, c) -> {
      MinuteStats s = firstOfKey.get(key);
      totalViews.add(new TotalView(s.type(), s.queue(), c[0], c[1], c[2]));
    });
    return Reply.ok(
        new StatsView(DurationText.format(window), to.minus(window), to, minutes, totalViews));
  }

  private static void add(long[] counts, JobState state, long n) {
    switch (state) {
      case SUCCEEDED -> counts[0] += n;
      case FAILED -> counts[1] += n;
      case CANCELLED -> counts[2] += n;
      default -> {}
    }
  }

  /** Finished jobs in one minute for one type and queue. */
  public record MinuteView(
      Instant minute, String type, String queue, long succeeded, long failed, long cancelled) {}

  /** Finished jobs over the whole window for one type and queue. */
  public record TotalView(String type, String queue, long succeeded, long failed, long cancelled) {}

  /**
   * The statistics of a window.
   *
   * @param window the window as asked for ({@code 1h})
   * @param minutes one entry per minute, type and queue that had finished jobs, oldest first
   * @param totals sums over the window per type and queue
   */
  public record StatsView(
      String window, Instant from, Instant to, List<MinuteView> minutes, List<TotalView> totals) {}
}
