package io.pgjobs;

import java.util.List;
import java.util.UUID;

/**
 * The jobs connected to a job through dependencies ({@link JobGraph}), as {@link JobClient#dependencyGraph}
 * reads them: every job reachable from it by following edges either way, up to a bound, with their
 * states and the edges between them. What the dashboard draws.
 *
 * @param jobs the jobs, the one asked for first
 * @param edges the edges between them
 * @param truncated true when the graph had more jobs than the bound (then some edges lead out of it)
 */
public record DependencyGraph(List<Node> jobs, List<Edge> edges, boolean truncated) {
  /**
   * A job of the graph.
   *
   * @param id its id
   * @param type its type
   * @param state its state now
   * @param queue its queue
   * @param name its name in the graph it was enqueued with, or null (a job enqueued on its own that a
   *     graph depends on)
   */
  public record Node(UUID id, String type, JobState state, String queue, String name) {}

  /**
   * An edge: {@code child} waits or waited for {@code parent}.
   *
   * @param parent the parent's id
   * @param child the child's id
   * @param onFailure the edge's policy
   * @param parentState how the parent ended, as the edge recorded it (null while it has not)
   */
  public record Edge(
      UUID parent, UUID child, Dependency.OnFailure onFailure, JobState parentState) {}
}
