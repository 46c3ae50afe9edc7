package io.pgjobs.lifecycle;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.pgjobs.lifecycle.WorkerProcesses.WorkerProcess;
import io.pgjobs.worker.JobWorker;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.HashMap;
import java.util.Map;

/**
 * What the worker JVMs of the chaos tests share ({@link FlowControlWorkerMain}, {@link GraphWorkerMain},
 * {@link WorkflowWorkerMain}): their {@code key=value} arguments, their pool, the settings that let a
 * killed worker's jobs be rescued within seconds, and the execution log their handlers write; and what
 * the tests read of those logs.
 */
final class ChaosWorkers {
  private ChaosWorkers() {}

  /** The {@code key=value} arguments. */
  static Map<String, String> arguments(String[] args) {
    Map<String, String> a = new HashMap<>();
    for (String arg : args) {
      int eq = arg.indexOf('=');
      a.put(arg.substring(0, eq), arg.substring(eq + 1));
    }
    return a;
  }

  /** A pool of {@code size} connections to {@code url}, named {@code id}. */
  static HikariDataSource pool(String url, String id, int size) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(url);
    config.setMaximumPoolSize(size);
    config.setMinimumIdle(1);
    config.setPoolName(id);
    return new HikariDataSource(config);
  }

  /** {@code builder} with heartbeats, leases and rescue fast enough for a killed worker's jobs to return within seconds. */
  static JobWorker.Builder quickRescue(JobWorker.Builder builder) {
    return builder
        .staleThreshold(Duration.ofMillis(2500))
        .heartbeatInterval(Duration.ofMillis(250))
        .workerDeadAfter(Duration.ofSeconds(3))
        .leaseTtl(Duration.ofSeconds(2))
        .pollInterval(Duration.ofMillis(200));
  }

  /**
   * An execution log: a line per start ({@code S}) and end ({@code E}) of an action, the action's words
   * then the wall clock in epoch microseconds, written and flushed at once, so the log of a process killed
   * with -9 holds every action it started.
   */
  static final class ExecutionLog {
    private final BufferedWriter out;

    ExecutionLog(Path file) throws IOException {
      this.out =
          Files.newBufferedWriter(file, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
    }

    /** One line, under the writer's lock (lanes share it). */
    void write(String kind, String action) {
      long micros = ChronoUnit.MICROS.between(Instant.EPOCH, Instant.now());
      synchronized (out) {
        try {
          out.write(kind + " " + action + " " + micros + "\n");
          out.flush();
        } catch (IOException e) {
          throw new UncheckedIOException(e);
        }
      }
    }
  }

  /**
   * The actions started and not ended in process {@code id}'s log (0 without a log); its lines have
   * {@code fields} words (a cut last line is not counted).
   */
  static long openRuns(Path logs, String id, int fields) throws IOException {
    Path file = logs.resolve(id + ".log");
    if (!Files.exists(file)) {
      return 0;
    }
    long open = 0;
    for (String line : Files.readAllLines(file)) {
      if (line.split(" ").length == fields) {
        open += line.startsWith("S ") ? 1 : -1;
      }
    }
    return open;
  }

  /** The worker with the most actions started and not ended in its log (its kill cuts the most), or -1. */
  static int mostOpenRuns(WorkerProcess[] workers, Path logs, int fields) throws IOException {
    int best = -1;
    long most = 0;
    for (int i = 0; i < workers.length; i++) {
      long open = openRuns(logs, workers[i].id(), fields);
      if (open > most) {
        most = open;
        best = i;
      }
    }
    return best;
  }
}
