package io.pgjobs.bench;

import io.pgjobs.JobClient;
import io.pgjobs.QueueLimits;
import io.pgjobs.config.DatabaseUrl;
import java.io.PrintStream;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;
import javax.sql.DataSource;
import org.HdrHistogram.Histogram;

/**
 * Runs one W5 run in a schema that exists and is migrated: starts the worker process
 * ({@link W5WorkerMain}) and the producer process ({@link W5ProducerMain}), each a JVM of its own, walks
 * the phases window by window, and after the last phase stops the producer and waits for the backlog to
 * drain. During an idle-transaction phase a connection of this process holds {@code BEGIN; SELECT
 * txid_current();} open and idle, and rolls it back at the phase's end. With partitions, the queue has
 * flow-control limits for the whole run, set before the processes start and cleared after they stop.
 *
 * <p>Memory stays bounded whatever the length: each window's pickups arrive as an HdrHistogram of a few
 * KiB, merged into one histogram per phase; the windows themselves are a few numbers each.
 */
final class W5Runner {
  private static final Duration ANSWER_TIMEOUT = Duration.ofSeconds(30);
  /** How long the backlog at the end may take to drain; after that the run reports what completed. */
  static final Duration DRAIN_TIMEOUT = Duration.ofMinutes(10);

  private final DatabaseUrl database;
  private final DataSource dataSource;
  private final String schema;
  private final PrintStream progress;

  W5Runner(DatabaseUrl database, DataSource dataSource, String schema, PrintStream progress) {
    this.database = database;
    this.dataSource = dataSource;
    this.schema = schema;
    this.progress = progress;
  }

  /**
   * One run. {@code rate} > 0: a sustained run at that rate over {@code phases}; otherwise a peak probe
   * keeping {@code peakDepth}. Each window and phase goes to {@code windows}/{@code phasesOut} as it ends.
   * {@code partitions} > 0 runs it with limits on ({@link W5Options#partitions()}).
   */
  W5Run run(
      String label,
      int repeat,
      int rate,
      int peakDepth,
      int lanes,
      double workMs,
      List<W5Options.Phase> phases,
      double windowS,
      int partitions,
      int partitionConcurrency,
      int globalConcurrency,
      Consumer<W5Run.Window> windowSink,
      Consumer<W5Run.PhaseSummary> phaseSink)
      throws Exception {
    List<W5Run.Window> windows = new ArrayList<>();
    List<W5Run.PhaseSummary> summaries = new ArrayList<>();
    W5Counters counters = W5Counters.create();
    WorkerProcess worker = null;
    WorkerProcess producer = null;
    // The connection that holds the idle transactions, opened before anything starts, so that a
    // server short of connections fails the run at once rather than in the middle of it.
    Connection holder = phases.stream().anyMatch(W5Options.Phase::idleTransaction)
        ? DriverManager.getConnection(database.jdbcUrl(), database.properties())
        : null;
    JobClient client = JobClient.builder(dataSource).schema(schema).build();
    String queue = W5WorkerMain.TYPE.queue();
    boolean limited = false;
    try {
      if (partitions > 0 || globalConcurrency > 0) {
        // Before the processes start: the worker's first claim goes through the limited claim, and
        // every job offered is counted under its partition. As W3L: partitioned by the key given at
        // enqueue, which the producer computes from each job's number.
        QueueLimits.Builder limits = QueueLimits.builder();
        if (partitions > 0) {
          limits.partitionBy("partition").partitionConcurrency(partitionConcurrency);
        }
        if (globalConcurrency > 0) {
          limits.globalConcurrency(globalConcurrency);
        }
        client.setLimits(queue, limits.build());
        limited = true;
        progress.printf(
            Locale.ROOT,
            "  limits set on queue '%s': %s%n",
            queue,
            W5Options.limitsText(partitions, partitionConcurrency, globalConcurrency));
      }
      worker = WorkerProcess.start(
          "W5 worker",
          database,
          W5WorkerMain.class,
          List.of(
              schema,
              Integer.toString(lanes),
              Long.toString(Math.round(workMs * 1000)),
              counters.file().toString()));
      producer = WorkerProcess.start(
          "W5 producer",
          database,
          W5ProducerMain.class,
          List.of(
              schema,
              rate > 0 ? "rate" : "depth",
              Integer.toString(rate > 0 ? rate : peakDepth),
              counters.file().toString(),
              Integer.toString(partitions)));
      worker.awaitReady(PgJobsWorkloads.WORKER_READY_TIMEOUT);
      producer.awaitReady(PgJobsWorkloads.WORKER_READY_TIMEOUT);
      // Empty the interval histograms of anything before the start.
      worker.request("WINDOW", ANSWER_TIMEOUT);
      long runStart = System.nanoTime();
      producer.send("START");
      long lastAt = runStart;
      long lastOffered = 0;
      long lastStarted = 0;
      long lastCompleted = 0;
      for (W5Options.Phase phase : phases) {
        long phaseStart = System.nanoTime();
        long phaseEnd = phaseStart + Math.round(phase.seconds() * 1e9);
        long phaseOffered0 = counters.get(W5Counters.OFFERED);
        long phaseCompleted0 = counters.get(W5Counters.COMPLETED);
        Histogram phaseHistogram = W5Histograms.empty();
        List<W5Run.Window> phaseWindows = new ArrayList<>();
        Connection idle = phase.idleTransaction() ? openIdleTransaction(holder) : null;
        try {
          long windowEnd = phaseStart;
          while (windowEnd < phaseEnd) {
            windowEnd = Math.min(phaseEnd, windowEnd + Math.round(windowS * 1e9));
            // A last window shorter than a fifth of a window goes into the one before.
            if (phaseEnd - windowEnd < Math.round(windowS * 0.2e9)) {
              windowEnd = phaseEnd;
            }
            long depthMax = sleepUntil(windowEnd, counters);
            Histogram pickups =
                W5Histograms.decode(worker.request("WINDOW", ANSWER_TIMEOUT).substring(7));
            Histogram calls =
                W5Histograms.decode(producer.request("WINDOW", ANSWER_TIMEOUT).substring(7));
            long now = System.nanoTime();
            long offered = counters.get(W5Counters.OFFERED);
            long started = counters.get(W5Counters.STARTED);
            long completed = counters.get(W5Counters.COMPLETED);
            long[] table = hotTable();
            double seconds = (now - lastAt) / 1e9;
            W5Run.Window w = new W5Run.Window(
                "W5",
                "window",
                label,
                repeat,
                phase.name(),
                phase.idleTransaction(),
                (now - runStart) / 1e9,
                seconds,
                offered - lastOffered,
                started - lastStarted,
                completed - lastCompleted,
                (offered - lastOffered) / seconds,
                (completed - lastCompleted) / seconds,
                Math.max(0, offered - started),
                Math.max(depthMax, offered - started),
                table[0],
                table[1],
                table[2] / 1048576.0,
                W5Histograms.ms(pickups, 50),
                W5Histograms.ms(pickups, 95),
                W5Histograms.ms(pickups, 99),
                W5Histograms.ms(pickups, 100),
                W5Histograms.ms(calls, 99));
            phaseHistogram.add(pickups);
            phaseWindows.add(w);
            windows.add(w);
            windowSink.accept(w);
            lastAt = now;
            lastOffered = offered;
            lastStarted = started;
            lastCompleted = completed;
            worker.checkAlive();
            producer.checkAlive();
          }
        } finally {
          if (idle != null) {
            closeIdleTransaction(idle);
          }
        }
        double phaseSeconds = (lastAt - phaseStart) / 1e9;
        long phaseOffered = lastOffered - phaseOffered0;
        long phaseCompleted = lastCompleted - phaseCompleted0;
        W5Run.PhaseSummary summary = new W5Run.PhaseSummary(
            "W5",
            "phase",
            label,
            repeat,
            phase.name(),
            phase.idleTransaction(),
            phaseSeconds,
            phaseOffered,
            phaseCompleted,
            phaseOffered / phaseSeconds,
            phaseCompleted / phaseSeconds,
            median(phaseWindows.stream().map(W5Run.Window::p50Ms).toList()),
            median(phaseWindows.stream().map(W5Run.Window::p99Ms).toList()),
            phaseWindows.stream()
                .map(W5Run.Window::p99Ms)
                .filter(v -> v != null)
                .max(Double::compare)
                .orElse(null),
            W5Histograms.ms(phaseHistogram, 50),
            W5Histograms.ms(phaseHistogram, 95),
            W5Histograms.ms(phaseHistogram, 99),
            W5Histograms.ms(phaseHistogram, 100),
            phaseWindows.stream().mapToLong(W5Run.Window::depthMax).max().orElse(0),
            phaseWindows.isEmpty() ? 0 : phaseWindows.getLast().depth(),
            phaseWindows.stream().mapToLong(W5Run.Window::deadTuples).max().orElse(0));
        summaries.add(summary);
        phaseSink.accept(summary);
      }
      producer.stop(Duration.ofSeconds(60));
      long drainStart = System.nanoTime();
      long offeredTotal = counters.get(W5Counters.OFFERED);
      long deadline = drainStart + DRAIN_TIMEOUT.toNanos();
      boolean drained = true;
      while (counters.get(W5Counters.COMPLETED) < offeredTotal) {
        if (System.nanoTime() > deadline) {
          // Reported (completed_total < offered_total), not thrown: the windows measured so far
          // stand.
          progress.printf(
              Locale.ROOT,
              "  W5 %s: only %,d of %,d offered jobs completed %s after the producer stopped%n",
              label,
              counters.get(W5Counters.COMPLETED),
              offeredTotal,
              DRAIN_TIMEOUT);
          drained = false;
          break;
        }
        worker.checkAlive();
        LockSupport.parkNanos(5_000_000);
      }
      double drainS = (System.nanoTime() - drainStart) / 1e9;
      long completedTotal = counters.get(W5Counters.COMPLETED);
      if (drained) {
        worker.stop(Duration.ofSeconds(60));
      }
      return new W5Run(
          label,
          repeat,
          rate,
          rate > 0 ? 0 : peakDepth,
          lanes,
          workMs,
          partitions,
          partitions > 0 ? partitionConcurrency : 0,
          globalConcurrency,
          windows,
          summaries,
          offeredTotal,
          completedTotal,
          drainS);
    } finally {
      if (producer != null) {
        producer.close();
      }
      if (worker != null) {
        worker.close();
      }
      // After the processes are gone: no claim of theirs meets the queue half-cleared.
      if (limited) {
        client.clearLimits(queue);
        progress.printf(Locale.ROOT, "  limits on queue '%s' cleared%n", queue);
      }
      counters.delete();
      if (holder != null) {
        holder.close();
      }
    }
  }

  /** The hot table's dead tuples, live tuples and size in bytes. */
  private long[] hotTable() throws SQLException {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(
            "SELECT n_dead_tup, n_live_tup, pg_relation_size(relid) FROM pg_stat_user_tables"
                + " WHERE schemaname = ? AND relname = 'jobs'")) {
      ps.setString(1, schema);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? new long[] {rs.getLong(1), rs.getLong(2), rs.getLong(3)} : new long[3];
      }
    }
  }

  /**
   * On a connection of its own (not the pool's): {@code BEGIN; SELECT txid_current();}, then the
   * connection stays idle in the transaction. Its transaction id holds back the xmin horizon, so vacuum
   * can remove no row version deleted or updated after it began, as with a report, a migration or a
   * forgotten {@code BEGIN} in psql.
   */
  private Connection openIdleTransaction(Connection c) throws SQLException {
    c.setAutoCommit(false);
    try (Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT txid_current()")) {
      rs.next();
      progress.printf(Locale.ROOT, "  idle transaction open (txid %d)%n", rs.getLong(1));
    }
    return c;
  }

  private void closeIdleTransaction(Connection c) {
    try {
      c.rollback();
      c.setAutoCommit(true);
      progress.println("  idle transaction rolled back");
    } catch (SQLException e) {
      throw new IllegalStateException(
          "could not roll back the idle transaction: " + e.getMessage(), e);
    }
  }

  /** How often the depth is sampled within a window (from the shared counters: no query). */
  private static final long DEPTH_SAMPLE_NANOS = 50_000_000L;

  /** Sleeps until {@code nanoTime}, sampling the depth; returns the largest depth seen. */
  private static long sleepUntil(long nanoTime, W5Counters counters) {
    long max = 0;
    long left;
    while ((left = nanoTime - System.nanoTime()) > 0) {
      LockSupport.parkNanos(Math.min(left, DEPTH_SAMPLE_NANOS));
      max = Math.max(max, counters.get(W5Counters.OFFERED) - counters.get(W5Counters.STARTED));
    }
    return max;
  }

  private static Double median(List<Double> values) {
    double[] v = values.stream()
        .filter(x -> x != null)
        .mapToDouble(Double::doubleValue)
        .sorted()
        .toArray();
    if (v.length == 0) {
      return null;
    }
    return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
  }
}
