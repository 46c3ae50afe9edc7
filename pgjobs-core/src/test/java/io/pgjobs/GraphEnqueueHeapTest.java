package io.pgjobs;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.pgjobs.testkit.JvmProcess;
import io.pgjobs.testkit.Tags;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * A graph of {@link JobGraph#MAX_JOBS} jobs, the largest a graph may be, is enqueued by a JVM whose heap
 * holds the graph and not much more: {@code enqueueGraph} makes each job and each edge as its COPY reads
 * it and lets it go. Holding them all (1,000,000 jobs and 2,000,000 edges, ~450 MB beside the caller's
 * graph) needed a heap of 768 MB for this graph and failed with {@code OutOfMemoryError} at 512 MB.
 */
@Tag(Tags.PROCESS)
@Tag(Tags.SLOW)
class GraphEnqueueHeapTest extends PgJobsTestBase {
  /** Printed by {@link EnqueueMain} once the graph is enqueued, followed by how many jobs it has. */
  static final String ENQUEUED = "GRAPH-ENQUEUED ";

  private static final int LAYER = 1_000;

  @Test
  void theLargestGraphAllowedIsEnqueuedByAJvmWithAHalfGigabyteHeap() throws Exception {
    int jobs = JobGraph.MAX_JOBS;
    try (JvmProcess process = JvmProcess.startWithFlags(
        "graph-enqueue-heap",
        EnqueueMain.class,
        List.of("-Xmx512m"),
        List.of(db.jdbcUrl(), Integer.toString(jobs)),
        Map.of())) {
      boolean ended = process.process().waitFor(5, TimeUnit.MINUTES);
      assertThat(ended)
          .as("the enqueue ended within 5 minutes:%n%s", process.output())
          .isTrue();
      assertThat(process.process().exitValue())
          .as("exit status, output:%n%s", process.output())
          .isZero();
      assertThat(process.output()).contains(ENQUEUED + jobs);
    }
    assertThat(count("pgjobs.jobs")).isEqualTo(jobs);
    assertThat(count("SELECT count(*) FROM pgjobs.jobs WHERE state = 'blocked'"))
        .as("every job but the first layer's waits for its parents")
        .isEqualTo(jobs - LAYER);
    assertThat(count("SELECT count(*) FROM pgjobs.jobs WHERE has_dependents"))
        .as("every job but the last layer's is a parent")
        .isEqualTo(jobs - LAYER);
    assertThat(count("SELECT count(*) FROM pgjobs.job_dependencies"))
        .isEqualTo(2L * (jobs - LAYER));
    assertThat(count("SELECT count(*) FROM pgjobs.job_graph_names")).isEqualTo(jobs);
  }

  /**
   * Builds a layered graph of {@code <jobs>} jobs (layers of 1,000, each job waiting for two of the layer
   * before) and enqueues it. Arguments: {@code <jdbc-url> <jobs>}.
   */
  public static final class EnqueueMain {
    private EnqueueMain() {}

    public static void main(String[] args) {
      HikariConfig config = new HikariConfig();
      config.setJdbcUrl(args[0]);
      config.setMaximumPoolSize(2);
      int jobs = Integer.parseInt(args[1]);
      try (HikariDataSource pool = new HikariDataSource(config)) {
        JobClient client = JobClient.builder(pool).knownTypes(NUMBERED).build();
        JobGraph.Builder graph = JobGraph.builder();
        String[] names = new String[jobs];
        for (int i = 0; i < jobs; i++) {
          names[i] = "n" + i;
          if (i < LAYER) {
            graph.add(names[i], NUMBERED, new Numbered(i));
          } else {
            int before = i - LAYER;
            int other = (i / LAYER - 1) * LAYER + (i + 1) % LAYER;
            graph.add(
                names[i],
                NUMBERED,
                new Numbered(i),
                Dependency.on(names[before]),
                Dependency.on(names[other]));
          }
        }
        System.out.println(ENQUEUED + client.enqueueGraph(graph.build()).ids().size());
      }
    }
  }
}
