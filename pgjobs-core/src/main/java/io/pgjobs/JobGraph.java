package io.pgjobs;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Jobs that wait for one another, enqueued together ({@link JobClient#enqueueGraph}): all of them or none,
 * in one transaction. A job runs when every job it depends on has ended; a job whose parent fails is
 * cancelled unless its {@link Dependency} says {@link Dependency#runAnyway() run anyway}. Fan-out is a
 * job with several children, fan-in a job with several parents:
 *
 * <pre>{@code
 * JobGraph graph = JobGraph.builder()
 *     .add("resize-a", RESIZE, new Resize("a.png"))
 *     .add("resize-b", RESIZE, new Resize("b.png"))
 *     .add("zip", ZIP, new Zip("album"), Dependency.on("resize-a"), Dependency.on("resize-b"))
 *     .add("notify", EMAIL, new Email("done"), Dependency.on("zip").runAnyway())
 *     .add("alert", EMAIL, new Email("a resize failed"),
 *         Dependency.on("resize-a").onlyIfItFails(), Dependency.on("resize-b").onlyIfItFails())
 *     .build();
 * Map<String, UUID> ids = client.enqueueGraph(graph).ids();
 * }</pre>
 *
 * A job may depend only on jobs added before it (or on jobs enqueued earlier, {@link Dependency#onJob}),
 * so a graph has no cycle by construction. Until its parents end a job is {@link JobState#BLOCKED}: no
 * claim reads it.
 */
public final class JobGraph {
  /**
   * The most jobs one graph may hold (a graph is one transaction: its jobs go in by COPY, its edges in
   * one statement; see docs/BENCHMARKS.md for the time a graph of this size takes).
   */
  public static final int MAX_JOBS = 1_000_000;
  /** The most parents one job may wait for (a fan-in's callback, say). */
  public static final int MAX_PARENTS = 100_000;
  /** The longest name of a job in a graph. */
  public static final int MAX_NAME_LENGTH = 255;

  /**
   * One job of a graph.
   *
   * @param name its name in the graph (unique there)
   * @param type its type, or null for a job added by type name
   * @param typeName its type's name
   * @param payload its payload (for a job added by type name, any JSON-serialisable value)
   * @param options how it is enqueued (no idempotency key, no unique key: see {@link Builder#add})
   * @param after what it waits for
   */
  public record Node(
      String name,
      JobType<?> type,
      String typeName,
      Object payload,
      EnqueueOptions options,
      List<Dependency> after) {}

  private final List<Node> nodes;
  private final String idempotencyKey;

  private JobGraph(List<Node> nodes, String idempotencyKey) {
    this.nodes = List.copyOf(nodes);
    this.idempotencyKey = idempotencyKey;
  }

  /** The graph's idempotency key, or null. */
  public String idempotencyKey() {
    return idempotencyKey;
  }

  /** A new, empty graph. */
  public static Builder builder() {
    return new Builder();
  }

  /** The jobs, in the order they were added (every job after the jobs of the graph it depends on). */
  public List<Node> nodes() {
    return nodes;
  }

  /** Builds a {@link JobGraph}; every mistake is refused as it is made, naming the job. */
  public static final class Builder {
    private final Map<String, Node> nodes = new LinkedHashMap<>();
    private String idempotencyKey;

    private Builder() {}

    /**
     * Makes the enqueue idempotent: the first {@link JobClient#enqueueGraph} under {@code key} stores the
     * graph, and a later one of the same graph (the same jobs by name, types, payloads, options other
     * than the context, and dependencies) stores nothing and returns the jobs the first one made
     * ({@link EnqueuedGraph#replayed()}); a different graph under the key is refused
     * ({@link IdempotencyKeyReusedException}). The safe retry after {@link EnqueueOutcomeUnknownException}.
     * Kept until the graph's first job's finished row is pruned. 1 to 255 characters.
     */
    public Builder idempotencyKey(String key) {
      if (key == null
          || key.isEmpty()
          || key.length() > EnqueueOptions.MAX_IDEMPOTENCY_KEY_LENGTH) {
        throw new InvalidJobException(
            "graph.idempotency_key",
            "is 1 to " + EnqueueOptions.MAX_IDEMPOTENCY_KEY_LENGTH + " characters, was "
                + (key == null ? "null" : key.length() + " characters"));
      }
      this.idempotencyKey = key;
      return this;
    }

    /** Adds a job with its type's defaults that waits for {@code after}. */
    public <P> Builder add(String name, JobType<P> type, P payload, Dependency... after) {
      return add(name, type, payload, EnqueueOptions.DEFAULTS, after);
    }

    /**
     * Adds a job that waits for {@code after} (none: it may run at once). Options are those of
     * {@link JobClient#enqueue(JobType, Object, EnqueueOptions)}, except an idempotency key and a unique
     * key, which are refused: a job that stands for another could not wait as the graph says.
     */
    public <P> Builder add(
        String name, JobType<P> type, P payload, EnqueueOptions options, Dependency... after) {
      if (type == null) {
        throw new InvalidJobException("graph[" + name + "].type", "is required");
      }
      return node(name, type, type.name(), payload, options, after);
    }

    /**
     * Adds a job by type name with any JSON-serialisable payload, as
     * {@link JobClient#enqueue(String, Object, EnqueueOptions)} does (a type the client knows gets its
     * defaults and its payload checked when the graph is enqueued): for graphs built from outside Java
     * code, such as {@code POST /graphs}.
     */
    public Builder add(
        String name, String type, Object payload, EnqueueOptions options, Dependency... after) {
      if (type == null) {
        throw new InvalidJobException("graph[" + name + "].type", "is required");
      }
      return node(name, null, type, payload, options, after);
    }

    private Builder node(
        String name,
        JobType<?> type,
        String typeName,
        Object payload,
        EnqueueOptions options,
        Dependency[] after) {
      if (name == null
          || name.isEmpty()
          || name.length() > MAX_NAME_LENGTH
          || name.indexOf('\u0000') >= 0) {
        throw new InvalidJobException(
            "graph.name",
            "a job's name in the graph is 1 to " + MAX_NAME_LENGTH + " characters, none of them"
                + " U+0000 (PostgreSQL text cannot hold it), was "
                + (name == null ? "null" : name.length() + " characters"));
      }
      String field = "graph[" + name + "]";
      if (nodes.containsKey(name)) {
        throw new InvalidJobException(
            field, "the graph already has a job of this name; names are unique");
      }
      if (nodes.size() >= MAX_JOBS) {
        throw new InvalidJobException(field, "a graph holds at most " + MAX_JOBS + " jobs");
      }
      EnqueueOptions opts = options == null ? EnqueueOptions.DEFAULTS : options;
      if (opts.idempotencyKey() != null || (type != null && type.idempotencyKeyFrom() != null)) {
        throw new InvalidJobException(
            field + ".idempotency_key",
            "is not allowed in a graph: a job that stands for another could not wait as the graph says");
      }
      if (opts.unique() != null || (type != null && type.unique() != null)) {
        throw new InvalidJobException(
            field + ".unique",
            "is not allowed in a graph: a job that stands for another could not wait as the graph says");
      }
      if (opts.parentId() != null) {
        throw new InvalidJobException(
            field + ".parent_id",
            "is not allowed in a graph: its jobs are linked by their dependencies");
      }
      List<Dependency> deps = after == null ? List.of() : List.of(after);
      if (deps.size() > MAX_PARENTS) {
        throw new InvalidJobException(
            field + ".after",
            "a job waits for at most " + MAX_PARENTS + " jobs, was " + deps.size());
      }
      long only =
          deps.stream().filter(d -> d.onFailure() == Dependency.OnFailure.ONLY).count();
      if (only > 0 && only < deps.size()) {
        throw new InvalidJobException(
            field + ".after",
            "a job that runs only if a parent fails (onlyIfItFails, on_failure only) waits only on such"
                + " dependencies; mixed with others it would be unclear when it runs");
      }
      Set<Object> parents = new HashSet<>();
      for (Dependency d : deps) {
        if (d.node() != null && !nodes.containsKey(d.node())) {
          throw new InvalidJobException(
              field + ".after",
              d.node().equals(name)
                  ? "a job cannot wait for itself"
                  : "no job named '" + d.node() + "' was added before it (a job waits only for jobs"
                      + " added before it, so a graph has no cycle)");
        }
        if (!parents.add(d.node() != null ? d.node() : d.job())) {
          throw new InvalidJobException(
              field + ".after",
              "waits twice for " + (d.node() != null ? "'" + d.node() + "'" : "job " + d.job()));
        }
      }
      nodes.put(name, new Node(name, type, typeName, payload, opts, deps));
      return this;
    }

    /** The graph. At least one job. */
    public JobGraph build() {
      if (nodes.isEmpty()) {
        throw new InvalidJobException("graph", "has no job; add at least one");
      }
      return new JobGraph(new ArrayList<>(nodes.values()), idempotencyKey);
    }
  }
}
