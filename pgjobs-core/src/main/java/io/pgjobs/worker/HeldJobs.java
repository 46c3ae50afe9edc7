package io.pgjobs.worker;

import io.pgjobs.store.ClaimedJob;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Every job this worker holds in the database, from the claim's reply until a write that gives it up is
 * confirmed (its outcome written, or given back to the queue). What the heartbeat renews, and what a
 * claim whose reply was lost is reconciled against: a job the database says this worker holds and that
 * is not here was never seen by the worker.
 */
final class HeldJobs {
  private final Map<UUID, HeldJob> held = new ConcurrentHashMap<>();
  /**
   * Held by the heartbeat from its snapshot until its statement returns, and by a lane that starts a
   * job the heartbeat marked {@code prefetched}: so the lane's clearing of the mark is never overtaken
   * by a heartbeat that set it.
   */
  private final ReentrantLock beatLock = new ReentrantLock();

  /** Records the jobs of a claim; returns their handles in the same order. */
  List<HeldJob> add(List<ClaimedJob> claimed) {
    long now = System.nanoTime();
    List<HeldJob> jobs = new ArrayList<>(claimed.size());
    for (ClaimedJob job : claimed) {
      HeldJob h = new HeldJob(job, now);
      held.put(job.id(), h);
      jobs.add(h);
    }
    return jobs;
  }

  /**
   * The claim {@code job} is given up: its job leaves, if the job is still held under that claim (a
   * later claim of the same job, held meanwhile, stays).
   */
  void remove(ClaimedJob job) {
    long token = job.claimToken();
    held.computeIfPresent(job.id(), (k, h) -> h.job().claimToken() == token ? null : h);
  }

  HeldJob get(UUID id) {
    return held.get(id);
  }

  int size() {
    return held.size();
  }

  /** Ids of the held jobs of {@code queue}. */
  Set<UUID> idsOf(String queue) {
    Set<UUID> ids = new java.util.HashSet<>();
    for (HeldJob h : held.values()) {
      if (h.job().queue().equals(queue)) {
        ids.add(h.job().id());
      }
    }
    return ids;
  }

  /**
   * A snapshot for the heartbeat, taken under {@link #beatLock()}: every held job's claim token, and the
   * jobs not started, which are marked (a lane that starts one of them clears the mark first).
   */
  Snapshot snapshot() {
    Map<UUID, Long> tokens = new HashMap<>(held.size() * 2);
    List<UUID> waiting = new ArrayList<>();
    for (HeldJob h : held.values()) {
      tokens.put(h.job().id(), h.job().claimToken());
      if (h.markIfWaiting()) {
        waiting.add(h.job().id());
      }
    }
    return new Snapshot(tokens, waiting);
  }

  /** The heartbeat's lock (see the field). */
  ReentrantLock beatLock() {
    return beatLock;
  }

  /**
   * A lane takes a job a heartbeat has marked {@code prefetched}: waits for a heartbeat in flight, so the
   * caller's clearing of the mark lands after it; every later heartbeat sees the job started.
   */
  void startMarked(HeldJob job) {
    beatLock.lock();
    try {
      job.setStarted();
    } finally {
      beatLock.unlock();
    }
  }

  record Snapshot(Map<UUID, Long> tokens, List<UUID> waiting) {}
}
