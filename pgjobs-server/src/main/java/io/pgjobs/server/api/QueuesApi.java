package io.pgjobs.server.api;

import io.javalin.http.Context;
import io.pgjobs.JobClient;
import io.pgjobs.JobState;
import io.pgjobs.QueueInfo;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;

/**
 * {@code /queues}: the overview (counts per state, scheduled, oldest ready job, paused) and pause/resume.
 *
 * <p>The overview is cached for a time that follows its cost. Counting jobs per queue and state reads
 * every row of both job tables (a count has to visit each row or index entry; about 0.3 s at a million
 * finished jobs), and every open dashboard asks for it after job events. When a computation takes over
 * {@value #CHEAP_MILLIS} ms its result is reused for ten times as long as it took (at most
 * {@value #MAX_AGE_MILLIS} ms), so the counting costs at most about a tenth of one database core however
 * many clients ask; a cheaper overview is computed for every request. Requests that arrive while it is
 * being computed wait for that computation instead of starting their own. A served copy's oldest-ready
 * ages are advanced by its age, and pause and resume through this server clear the cache.
 */
public final class QueuesApi {
  /** An overview computed faster than this many milliseconds is not cached. */
  static final long CHEAP_MILLIS = 100;
  /** Longest an overview is reused, in milliseconds. */
  static final long MAX_AGE_MILLIS = 10_000;

  private final JobClient client;
  private final ReentrantLock computing = new ReentrantLock();
  private volatile Cached cached;
  /** Bumped by every invalidation, so a computation that started before one is not cached. */
  private final AtomicLong generation = new AtomicLong();

  /** Serves {@code client}'s queues. */
  public QueuesApi(JobClient client) {
    this.client = client;
  }

  /** An overview, when it was computed and how long it may be reused (System.nanoTime). */
  private record Cached(List<QueueInfo> queues, long computedAt, long maxAgeNanos) {
    boolean fresh(long now) {
      return now - computedAt < maxAgeNanos;
    }

    /** The queues with their oldest-ready ages advanced to {@code now}. */
    List<QueueInfo> at(long now) {
      Duration age = Duration.ofNanos(now - computedAt);
      return queues.stream()
          .map(q -> q.oldestDueAge() == null
              ? q
              : new QueueInfo(
                  q.name(),
                  q.counts(),
                  q.scheduled(),
                  q.oldestDueAge().plus(age),
                  q.paused(),
                  q.unrunnable(),
                  q.unserved()))
          .toList();
    }
  }

  /** The queues from the cache when it is fresh, else computed (once for all concurrent callers). */
  private List<QueueInfo> queues() {
    Cached c = cached;
    if (c != null && c.fresh(System.nanoTime())) {
      return c.at(System.nanoTime());
    }
    computing.lock();
    try {
      c = cached;
      if (c != null && c.fresh(System.nanoTime())) {
        return c.at(System.nanoTime());
      }
      long gen = generation.get();
      long start = System.nanoTime();
      List<QueueInfo> queues = client.queues();
      long took = System.nanoTime() - start;
      long maxAge = took < TimeUnit.MILLISECONDS.toNanos(CHEAP_MILLIS)
          ? 0
          : Math.min(10 * took, TimeUnit.MILLISECONDS.toNanos(MAX_AGE_MILLIS));
      // Aged from the start of the computation: its counts are at least that old.
      if (generation.get() == gen) {
        cached = new Cached(queues, start, maxAge);
      }
      return queues;
    } finally {
      computing.unlock();
    }
  }

  /** Registers the routes. */
  public void register(Routes routes) {
    routes.get("/queues", ctx -> Reply.ok(new QueueListView(overview())));
    routes.post("/queues/{name}/pause", ctx -> setPaused(ctx, true));
    routes.post("/queues/{name}/resume", ctx -> setPaused(ctx, false));
  }

  /** Every queue, by name. */
  public List<QueueView> overview() {
    return queues().stream().map(QueueView::of).toList();
  }

  private Reply setPaused(Context ctx, boolean paused) {
    String name = ctx.pathParam("name");
    if (paused) {
      client.pauseQueue(name);
    } else {
      client.resumeQueue(name);
    }
    generation.incrementAndGet();
    cached = null;
    QueueView view = overview().stream()
        .filter(q -> q.name().equals(name))
        .findFirst()
        .orElseGet(
            () -> new QueueView(name, zeroCounts(), 0, null, paused, UnrunnableView.NONE, false));
    return Reply.ok(view);
  }

  private static Map<String, Long> zeroCounts() {
    Map<String, Long> counts = new LinkedHashMap<>();
    for (JobState s : JobState.values()) {
      counts.put(s.value(), 0L);
    }
    return counts;
  }

  /**
   * One queue.
   *
   * @param counts jobs per state (finished ones while kept), every state present
   * @param scheduled queued jobs whose run_at is in the future
   * @param oldestReadyAgeMs how long the oldest due job has waited, or null when none is due
   * @param paused true while workers do not claim from it
   * @param unrunnable its waiting jobs that need a capability no live worker of the queue declares
   * @param unserved true while jobs wait in it and no live worker serves the queue
   */
  public record QueueView(
      String name,
      Map<String, Long> counts,
      long scheduled,
      Long oldestReadyAgeMs,
      boolean paused,
      UnrunnableView unrunnable,
      boolean unserved) {
    static QueueView of(QueueInfo q) {
      Map<String, Long> counts = new LinkedHashMap<>();
      for (JobState s : JobState.values()) {
        counts.put(s.value(), q.count(s));
      }
      return new QueueView(
          q.name(),
          counts,
          q.scheduled(),
          q.oldestDueAge() == null ? null : q.oldestDueAge().toMillis(),
          q.paused(),
          new UnrunnableView(q.unrunnable().count(), q.unrunnable().capabilities()),
          q.unserved());
    }
  }

  /**
   * Waiting jobs (queued or retrying, due or scheduled) that need a capability no live worker serving the
   * queue has declared: they stay queued until such a worker starts.
   *
   * @param count how many
   * @param capabilities the capabilities they need, sorted
   */
  public record UnrunnableView(long count, List<String> capabilities) {
    static final UnrunnableView NONE = new UnrunnableView(0, List.of());
  }

  /** The queue overview. */
  public record QueueListView(List<QueueView> queues) {}
}
