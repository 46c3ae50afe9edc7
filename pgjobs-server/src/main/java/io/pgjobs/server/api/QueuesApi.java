package io.pgjobs.server.api;

import io.javalin.http.Context;
import io.pgjobs.JobClient;
import io.pgjobs.JobState;
import io.pgjobs.QueueInfo;
import io.pgjobs.QueueLimits;
import io.pgjobs.QueueLimitsStatus;
import io.pgjobs.server.api.LimitsJson.LimitsView;
import io.pgjobs.server.problem.ApiProblem;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Function;
import java.util.stream.Collectors;

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
 *
 * <p>Each queue's flow-control limits and their usage ({@code limits}) are read apart from the counts, for
 * every limited queue at once, and reused for at most {@value #LIMITS_MAX_AGE_MILLIS} ms: a limit lowered
 * elsewhere (another server, the CLI) shows within a second whatever the counts' age, and setting or
 * removing limits through this server shows at once. {@code /queues/{name}/limits} reads and sets them.
 */
public final class QueuesApi {
  /** An overview computed faster than this many milliseconds is not cached. */
  static final long CHEAP_MILLIS = 100;
  /** Longest an overview is reused, in milliseconds. */
  static final long MAX_AGE_MILLIS = 10_000;

  /** Longest the limits and their usage are reused, in milliseconds. */
  static final long LIMITS_MAX_AGE_MILLIS = 1_000;

  private final JobClient client;
  /** Every limited queue's status and when it was read (System.nanoTime), or null. */
  private volatile LimitsCached limitsCached;

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

  /** Every limited queue's status and when it was read. */
  private record LimitsCached(Map<String, QueueLimitsStatus> byQueue, long readAt) {}

  /**
   * Every limited queue's status, by queue, read at most {@value #LIMITS_MAX_AGE_MILLIS} ms ago. Cheap to
   * read (one statement, and two per limited queue) but asked for by every open dashboard after job events.
   */
  private Map<String, QueueLimitsStatus> limits() {
    LimitsCached c = limitsCached;
    long now = System.nanoTime();
    if (c != null && now - c.readAt() < TimeUnit.MILLISECONDS.toNanos(LIMITS_MAX_AGE_MILLIS)) {
      return c.byQueue();
    }
    Map<String, QueueLimitsStatus> byQueue = client.limitsStatus().stream()
        .collect(Collectors.toMap(
            QueueLimitsStatus::queue, Function.identity(), (a, b) -> a, LinkedHashMap::new));
    limitsCached = new LimitsCached(byQueue, now);
    return byQueue;
  }

  /** Forgets the cached counts and limits: a change made here shows in the next answer. */
  private void invalidate() {
    generation.incrementAndGet();
    cached = null;
    limitsCached = null;
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
    routes.get("/queues/{name}/limits", ctx -> {
      String name = queueName(ctx);
      return Reply.ok(LimitsView.of(client
          .limitsStatus(name)
          .orElseThrow(() -> ApiProblem.notFound(
              "queue '" + name + "' has no limits; PUT /queues/" + name + "/limits sets them"))));
    });
    routes.put("/queues/{name}/limits", ctx -> {
      String name = queueName(ctx);
      QueueLimits limits = LimitsJson.read(ctx, routes.json(), name);
      requireExists(name);
      client.setLimits(name, limits);
      invalidate();
      return Reply.ok(LimitsView.of(client.limitsStatus(name).orElseThrow()));
    });
    routes.delete("/queues/{name}/limits", ctx -> {
      String name = queueName(ctx);
      if (client.limits(name).isEmpty()) {
        // Nothing to remove: the same answer as after removing them (DELETE is idempotent), but a
        // misspelt queue is said to be one.
        requireExists(name);
        return Reply.of(204, null);
      }
      client.clearLimits(name);
      invalidate();
      return Reply.of(204, null);
    });
  }

  /** A queue's name: the rule of the library's names ({@code JobType}), said again here where it is checked. */
  private static final java.util.regex.Pattern QUEUE_NAME =
      java.util.regex.Pattern.compile("[A-Za-z0-9_.:\\-/]{1,255}");

  /** The queue named in the path: 400 naming {@code name} unless it is a valid queue name. */
  private static String queueName(Context ctx) {
    String name = ctx.pathParam("name");
    if (!QUEUE_NAME.matcher(name).matches()) {
      throw ApiProblem.badField(
          "name",
          "invalid queue name '" + (name.length() > 100 ? name.substring(0, 100) + "…" : name)
              + "'; allowed: 1 to 255 characters of letters, digits and _ . : - /");
    }
    return name;
  }

  /**
   * 404 unless the queue exists: jobs name it (unfinished or finished), it has a row of its own (paused
   * or limited), or a live worker serves it. Limits for a queue nothing knows are most likely a typo.
   */
  private void requireExists(String name) {
    Cached c = cached;
    if (c != null && c.queues().stream().anyMatch(q -> q.name().equals(name))) {
      return;
    }
    if (limits().containsKey(name)
        || client.workers().stream().anyMatch(w -> w.alive() && w.queues().containsKey(name))) {
      return;
    }
    // Not in the cached overview: count afresh, a job may have been enqueued since.
    if (client.queues().stream().noneMatch(q -> q.name().equals(name))) {
      throw ApiProblem.notFound(
          "no queue named '" + name + "': no job names it, it was never paused"
              + " or limited, and no live worker serves it");
    }
  }

  /**
   * Every queue, by name, with its limits: the queues that have jobs or a row of their own (paused or
   * limited; a limited queue not yet in a cached overview is added with no jobs).
   */
  public List<QueueView> overview() {
    Map<String, QueueLimitsStatus> limits = limits();
    List<QueueView> views = new ArrayList<>();
    java.util.Set<String> names = new java.util.HashSet<>();
    for (QueueInfo q : queues()) {
      views.add(QueueView.of(q, limits.get(q.name())));
      names.add(q.name());
    }
    boolean added = false;
    for (QueueLimitsStatus s : limits.values()) {
      if (!names.contains(s.queue())) {
        views.add(new QueueView(
            s.queue(), zeroCounts(), 0, null, false, UnrunnableView.NONE, false, LimitsView.of(s)));
        added = true;
      }
    }
    if (added) {
      views.sort(Comparator.comparing(QueueView::name));
    }
    return views;
  }

  private Reply setPaused(Context ctx, boolean paused) {
    String name = ctx.pathParam("name");
    if (paused) {
      client.pauseQueue(name);
    } else {
      client.resumeQueue(name);
    }
    invalidate();
    QueueView view = overview().stream()
        .filter(q -> q.name().equals(name))
        .findFirst()
        .orElseGet(() ->
            new QueueView(name, zeroCounts(), 0, null, paused, UnrunnableView.NONE, false, null));
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
   * @param limits its flow-control limits and what they hold back now, or null for an unlimited queue
   */
  public record QueueView(
      String name,
      Map<String, Long> counts,
      long scheduled,
      Long oldestReadyAgeMs,
      boolean paused,
      UnrunnableView unrunnable,
      boolean unserved,
      LimitsView limits) {
    static QueueView of(QueueInfo q, QueueLimitsStatus limits) {
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
          q.unserved(),
          limits == null ? null : LimitsView.of(limits));
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
