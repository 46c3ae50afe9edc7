package io.pgjobs.bench;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Locale;
import javax.sql.DataSource;

/**
 * Where a drain's time goes, per job (issue 31 §2): opt-in with {@code -Dpgjobs.bench.profile=true}, for
 * every drain of {@link PgJobsWorkloads#drainWithProcesses}. It prints to stderr, after the drain:
 * <ul>
 *   <li>the CPU time per job of the worker processes, of this process (the bench's poll) and of the
 *       rest of the machine (PostgreSQL, mostly), from Linux's {@code /proc}, with the machine's idle
 *       time: on 2 cores a microsecond the worker spends is taken from the database;
 *   <li>the statements that ran, from {@code pg_stat_statements} (reset at the drain's start; needs the
 *       extension preloaded and created in the database, and {@code pg_stat_statements.track = all} to
 *       see the statements triggers run): calls, execution time, rows and WAL bytes, per job.
 * </ul>
 * The worker's own hot methods come from JFR: start the children with
 * {@code PGJOBS_BENCH_WORKER_JAVA_OPTS="-Xmx64m -XX:+UseSerialGC -XX:TieredStopAtLevel=1
 * -XX:StartFlightRecording=filename=/tmp/w-%p.jfr,settings=profile"}. Profiling costs a few percent of
 * the drain; a profiled run's rate is not a benchmark figure. With {@code -Dpgjobs.bench.perf=PREFIX} as
 * well, each drain runs under {@code perf record -a -g -o PREFIX-<n>.data} (the whole machine, PostgreSQL
 * included; read it with {@code perf report --comm postgres}).
 */
final class DrainProfile {
  /** The system property that turns the profile on. */
  static final String PROPERTY = "pgjobs.bench.profile";

  private static final Path PROC = Path.of("/proc");
  /** Linux's USER_HZ: clock ticks per second in /proc's CPU times. */
  private static final double TICKS_PER_SECOND = 100.0;

  private static final String STATEMENTS = """
      select calls, total_exec_time, rows, wal_bytes, shared_blks_hit + shared_blks_read, toplevel,
             plans, total_plan_time,
             regexp_replace(query, '\\s+', ' ', 'g')
        from pg_stat_statements
       where dbid = (select oid from pg_database where datname = current_database())
         and query not like '%pg_stat_statements%'
       order by total_exec_time desc
       limit 25""";

  private final DataSource dataSource;
  private final List<Long> workerPids;
  private final long[] machineStart;
  private final long workersStart;
  private final long selfStart;
  private final long startNanos;
  private final Process perf;
  private static int perfRuns;

  private DrainProfile(DataSource dataSource, List<Long> workerPids) throws SQLException {
    this.dataSource = dataSource;
    this.workerPids = workerPids;
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement()) {
      try (ResultSet rs = s.executeQuery(
          "select count(*) from pg_extension where extname = 'pg_stat_statements'")) {
        rs.next();
        if (rs.getLong(1) == 0) {
          throw new IllegalStateException("-D" + PROPERTY + "=true needs the pg_stat_statements"
              + " extension in this database: ALTER SYSTEM SET shared_preload_libraries ="
              + " 'pg_stat_statements', restart PostgreSQL, then CREATE EXTENSION pg_stat_statements"
              + " (docs/BENCHMARKS.md, How to reproduce)");
        }
      }
      s.execute("select pg_stat_statements_reset()");
    }
    this.machineStart = machineTicks();
    this.workersStart = processTicks(workerPids);
    this.selfStart = processTicks(List.of(ProcessHandle.current().pid()));
    this.perf = startPerf();
    this.startNanos = System.nanoTime();
  }

  /** {@code perf record} of the whole machine if {@code pgjobs.bench.perf} names a file prefix. */
  private static Process startPerf() {
    String prefix = System.getProperty("pgjobs.bench.perf");
    if (prefix == null || prefix.isBlank()) {
      return null;
    }
    String file = prefix + "-" + (++perfRuns) + ".data";
    try {
      Process p = new ProcessBuilder("perf", "record", "-a", "-g", "-q", "-o", file)
          .redirectErrorStream(true)
          .redirectOutput(ProcessBuilder.Redirect.DISCARD)
          .start();
      Thread.sleep(300); // perf takes a moment to attach to every CPU
      return p;
    } catch (IOException e) {
      throw new IllegalStateException("cannot start perf: " + e.getMessage(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return null;
    }
  }

  /** Whether {@value #PROPERTY} is set. */
  static boolean enabled() {
    return Boolean.getBoolean(PROPERTY);
  }

  /** Resets the statement statistics and notes the CPU times; call just before the drain starts. */
  static DrainProfile start(DataSource dataSource, List<Long> workerPids) throws SQLException {
    return new DrainProfile(dataSource, workerPids);
  }

  /** Prints the profile of the {@code jobs} drained since {@link #start}, under {@code label}. */
  void finish(String label, int jobs, PrintStream out) throws SQLException {
    double wallSeconds = (System.nanoTime() - startNanos) / 1e9;
    if (perf != null) {
      // SIGINT: perf writes its file and exits.
      try {
        new ProcessBuilder("kill", "-INT", Long.toString(perf.pid())).start().waitFor();
        perf.waitFor();
      } catch (IOException e) {
        perf.destroy();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    long[] machine = machineTicks();
    long busy = machine[0] - machineStart[0];
    long idle = machine[1] - machineStart[1];
    long workers = processTicks(workerPids) - workersStart;
    long self = processTicks(List.of(ProcessHandle.current().pid())) - selfStart;
    long rest = busy - workers - self;
    out.printf(Locale.ROOT, "profile of %s: %,d jobs in %.2f s%n", label, jobs, wallSeconds);
    out.printf(
        Locale.ROOT,
        "  CPU µs per job: workers %.1f, bench %.1f, rest of the machine (PostgreSQL) %.1f,"
            + " idle %.1f (of %.1f in all)%n",
        perJob(workers, jobs),
        perJob(self, jobs),
        perJob(rest, jobs),
        perJob(idle, jobs),
        perJob(busy + idle, jobs));
    out.println("  statements (pg_stat_statements), per job: calls, execution µs, rows, WAL bytes,"
        + " buffers, plans, planning µs (with pg_stat_statements.track_planning); top-level or"
        + " nested; text");
    try (Connection c = dataSource.getConnection();
        PreparedStatement s = c.prepareStatement(STATEMENTS);
        ResultSet rs = s.executeQuery()) {
      while (rs.next()) {
        String text = rs.getString(9);
        out.printf(
            Locale.ROOT,
            "  %8.4f %8.2f %8.3f %8.1f %8.2f %8.4f %6.2f %s %s%n",
            rs.getLong(1) / (double) jobs,
            rs.getDouble(2) * 1000 / jobs,
            rs.getLong(3) / (double) jobs,
            rs.getDouble(4) / jobs,
            rs.getLong(5) / (double) jobs,
            rs.getLong(7) / (double) jobs,
            rs.getDouble(8) * 1000 / jobs,
            rs.getBoolean(6) ? "top " : "nest",
            text.length() > 160 ? text.substring(0, 160) + "…" : text);
      }
    }
  }

  private static double perJob(long ticks, int jobs) {
    return ticks / TICKS_PER_SECOND * 1e6 / jobs;
  }

  /** The machine's busy and idle (with iowait) clock ticks, from the first line of /proc/stat. */
  private static long[] machineTicks() {
    try {
      String[] f = Files.readAllLines(PROC.resolve("stat")).get(0).trim().split("\\s+");
      long busy = 0;
      for (int i = 1; i < f.length && i <= 8; i++) {
        if (i != 4 && i != 5) {
          busy += Long.parseLong(f[i]);
        }
      }
      return new long[] {busy, Long.parseLong(f[4]) + Long.parseLong(f[5])};
    } catch (IOException | RuntimeException e) {
      return new long[] {0, 0};
    }
  }

  /** User plus system clock ticks of the processes (0 for one that is gone or not on Linux). */
  private static long processTicks(List<Long> pids) {
    long sum = 0;
    for (long pid : pids) {
      try {
        String stat = Files.readString(PROC.resolve(Long.toString(pid)).resolve("stat"));
        // The command name (field 2) may hold spaces; the fields after its closing parenthesis are
        // state (3), ..., utime (14), stime (15).
        String[] f = stat.substring(stat.lastIndexOf(')') + 2).split("\\s+");
        sum += Long.parseLong(f[11]) + Long.parseLong(f[12]);
      } catch (IOException | RuntimeException e) {
        // gone
      }
    }
    return sum;
  }
}
