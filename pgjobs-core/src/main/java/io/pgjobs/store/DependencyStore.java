package io.pgjobs.store;

import io.pgjobs.InvalidJobException;
import io.pgjobs.JobState;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;

/**
 * Stores the edges of a job graph beside its jobs ({@link DependencySql}), in the caller's transaction,
 * and reads a job's parents. A parent's end resolves its edges in the database (the trigger
 * {@code jobs_resolve_dependents}).
 */
public final class DependencyStore {
  private final String copyEdges;
  private final String copyNames;
  private final String insertGraphKey;
  private final String findGraphKey;
  private final String markParents;
  private final String endedParents;
  private final String resolveEnded;
  private final String blockWaiting;
  private final String cancelDoomed;
  private final String queueFired;
  private final String parents;
  private final String graphIds;
  private final String graphNodes;
  private final String graphEdges;

  /**
   * One edge to store: {@code child} waits for {@code parent}.
   *
   * @param parent the parent's id
   * @param child the child's id
   * @param onFailure {@code cancel}, {@code run} or {@code only}
   * @param childName the child's name in its graph, for error messages
   * @param parentInGraph whether the parent is a job of the same graph (else a job enqueued before it)
   */
  public record Edge(
      UUID parent, UUID child, String onFailure, String childName, boolean parentInGraph) {}

  /**
   * A parent of a job as its child sees it.
   *
   * @param id the parent's id
   * @param type its job type
   * @param onFailure the edge's policy: {@code cancel} or {@code run}
   * @param state how it ended, or null while it has not
   * @param output its output as JSON text if it succeeded with one, else null
   */
  public record Parent(UUID id, String type, String onFailure, JobState state, String output) {}

  /** A store over {@code schema}. */
  public DependencyStore(String schema) {
    this.copyEdges = JobSql.forSchema(DependencySql.COPY_EDGES, schema);
    this.copyNames = JobSql.forSchema(DependencySql.COPY_NAMES, schema);
    this.insertGraphKey = JobSql.forSchema(DependencySql.INSERT_GRAPH_KEY, schema);
    this.findGraphKey = JobSql.forSchema(DependencySql.FIND_GRAPH_KEY, schema);
    this.markParents = JobSql.forSchema(DependencySql.MARK_PARENTS, schema);
    this.endedParents = JobSql.forSchema(DependencySql.ENDED_PARENTS, schema);
    this.resolveEnded = JobSql.forSchema(DependencySql.RESOLVE_ENDED, schema);
    this.blockWaiting = JobSql.forSchema(DependencySql.BLOCK_WAITING, schema);
    this.cancelDoomed = JobSql.forSchema(DependencySql.CANCEL_DOOMED, schema);
    this.queueFired = JobSql.forSchema(DependencySql.QUEUE_FIRED, schema);
    this.parents = JobSql.forSchema(DependencySql.PARENTS, schema);
    this.graphIds = JobSql.forSchema(DependencySql.GRAPH_IDS, schema);
    this.graphNodes = JobSql.forSchema(DependencySql.GRAPH_NODES, schema);
    this.graphEdges = JobSql.forSchema(DependencySql.GRAPH_EDGES, schema);
  }

  /**
   * Links the jobs of a graph, just inserted on {@code c} in its open transaction, already placed as
   * their edges within the graph say ({@link EnqueueStore#insertGraph}): stores the names and
   * {@code edges}; for parents enqueued before the graph, marks those still in the hot table (and locks
   * them until commit), resolves the edges from those that had already ended, counts every edge not
   * resolved into their children, and cancels the children whose parent had already failed (with
   * {@code cancel}). Throws {@link InvalidJobException} for a parent that does not exist; the caller rolls
   * back.
   *
   * @param graph the ids of the graph's jobs by their names there (the names are stored too)
   * @param edges the edges, read in order (it may make each as it is read: a graph of a million jobs
   *     has two million), once by the COPY and again only if a parent was enqueued before the graph
   */
  public void link(Connection c, Map<String, UUID> graph, List<Edge> edges) throws SQLException {
    java.util.Iterator<Map.Entry<String, UUID>> named = graph.entrySet().iterator();
    CopyStatement.copy(c, copyNames, graph.size(), (i, row) -> {
      Map.Entry<String, UUID> job = named.next(); // the COPY writes rows 0, 1, ... in turn
      row.uuid(job.getValue()).text(job.getKey());
    });
    if (edges.isEmpty()) {
      return;
    }
    boolean[] earlier = {false};
    CopyStatement.copy(c, copyEdges, edges.size(), (i, row) -> {
      Edge e = edges.get(i);
      earlier[0] |= !e.parentInGraph();
      row.uuid(e.parent()).uuid(e.child()).text(e.onFailure());
    });
    if (!earlier[0]) {
      return; // every parent is the graph's own: the COPY placed them
    }
    // Parents from before the graph: the graph's own were placed by the COPY.
    Set<UUID> distinctParents = new LinkedHashSet<>();
    Set<UUID> waitingOnEarlier = new LinkedHashSet<>();
    for (Edge e : edges) {
      if (!e.parentInGraph()) {
        distinctParents.add(e.parent());
        waitingOnEarlier.add(e.child());
      }
    }
    if (distinctParents.isEmpty()) {
      return;
    }
    Set<UUID> marked = new HashSet<>();
    try (PreparedStatement ps = c.prepareStatement(markParents)) {
      ps.setArray(1, c.createArrayOf("uuid", distinctParents.toArray()));
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          marked.add(rs.getObject(1, UUID.class));
        }
      }
    }
    List<UUID> missing =
        distinctParents.stream().filter(p -> !marked.contains(p)).toList();
    Map<UUID, String> ended = new HashMap<>();
    if (!missing.isEmpty()) {
      try (PreparedStatement ps = c.prepareStatement(endedParents)) {
        ps.setArray(1, c.createArrayOf("uuid", missing.toArray()));
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            ended.put(rs.getObject(1, UUID.class), rs.getString(2));
          }
        }
      }
      for (Edge e : edges) {
        if (!marked.contains(e.parent()) && !ended.containsKey(e.parent())) {
          throw new InvalidJobException(
              "graph[" + e.childName() + "].after",
              "job " + e.parent() + " does not exist (never enqueued, or finished and pruned)");
        }
      }
      try (PreparedStatement ps = c.prepareStatement(resolveEnded)) {
        ps.setArray(1, c.createArrayOf("uuid", ended.keySet().toArray()));
        ps.setArray(2, c.createArrayOf("text", ended.values().toArray()));
        ps.setArray(3, c.createArrayOf("uuid", waitingOnEarlier.toArray()));
        ps.executeUpdate();
      }
    }
    try (PreparedStatement ps = c.prepareStatement(blockWaiting)) {
      ps.setArray(1, c.createArrayOf("uuid", waitingOnEarlier.toArray()));
      ps.executeUpdate();
    }
    List<UUID> doomed = new ArrayList<>();
    StringBuilder why = new StringBuilder();
    for (Edge e : edges) {
      String state = ended.get(e.parent());
      if (state != null
          && !state.equals("succeeded")
          && e.onFailure().equals("cancel")
          && !doomed.contains(e.child())) {
        doomed.add(e.child());
        if (why.isEmpty()) {
          why.append("cancelled: a job it depends on had ended ")
              .append(state)
              .append(" before it was enqueued (job ")
              .append(e.parent())
              .append(')');
        }
      }
    }
    cancel(c, doomed, why.toString());
    // Jobs that run only if a parent fails ('only', all their edges): one that had already failed
    // queues them now; parents that had all succeeded leave them not needed.
    Map<UUID, List<Edge>> onlyEdges = new java.util.LinkedHashMap<>();
    for (Edge e : edges) {
      if (e.onFailure().equals("only")) {
        onlyEdges.computeIfAbsent(e.child(), k -> new ArrayList<>()).add(e);
      }
    }
    List<UUID> fired = new ArrayList<>();
    List<UUID> unneeded = new ArrayList<>();
    onlyEdges.forEach((child, list) -> {
      if (list.stream()
          .anyMatch(
              e -> ended.containsKey(e.parent()) && !ended.get(e.parent()).equals("succeeded"))) {
        fired.add(child);
      } else if (list.stream().allMatch(e -> "succeeded".equals(ended.get(e.parent())))) {
        unneeded.add(child);
      }
    });
    if (!fired.isEmpty()) {
      try (PreparedStatement ps = c.prepareStatement(queueFired)) {
        ps.setArray(1, c.createArrayOf("uuid", fired.toArray()));
        ps.executeUpdate();
      }
    }
    cancel(
        c,
        unneeded,
        "not needed: it was to run if a job it watched failed, and every one had succeeded before it was"
            + " enqueued");
  }

  private void cancel(Connection c, List<UUID> ids, String message) throws SQLException {
    if (ids.isEmpty()) {
      return;
    }
    try (PreparedStatement ps = c.prepareStatement(cancelDoomed)) {
      ps.setArray(1, c.createArrayOf("uuid", ids.toArray()));
      ps.setString(2, message);
      ps.executeUpdate();
    }
  }

  /**
   * What a graph's idempotency key already names.
   *
   * @param fingerprint what the enqueue that took it asked for
   * @param firstJob the id of its graph's first job
   * @param jobsJson its jobs, name to id, as JSON
   */
  public record GraphKey(String fingerprint, UUID firstJob, String jobsJson) {}

  /**
   * Takes {@code key} for a graph on {@code c} in its open transaction, or returns what the key already
   * names (after waiting for an enqueue under it that had not committed yet).
   *
   * @return null if this graph took the key
   */
  public GraphKey takeGraphKey(
      Connection c, String key, String fingerprint, UUID firstJob, String jobsJson)
      throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(insertGraphKey)) {
      ps.setString(1, key);
      ps.setString(2, fingerprint);
      ps.setObject(3, firstJob);
      ps.setString(4, jobsJson);
      try (ResultSet rs = ps.executeQuery()) {
        if (rs.next()) {
          return null;
        }
      }
    }
    try (PreparedStatement ps = c.prepareStatement(findGraphKey)) {
      ps.setString(1, key);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          // Taken by an enqueue that rolled back between our insert and this read: rare; the
          // caller's retry takes it.
          throw new SQLException(
              "graph key '" + key + "' changed hands while it was read; try again", "40001");
        }
        return new GraphKey(rs.getString(1), rs.getObject(2, UUID.class), rs.getString(3));
      }
    }
  }

  /** The parents of job {@code child}, with how each ended. */
  public List<Parent> parents(Connection c, UUID child) throws SQLException {
    List<Parent> out = new ArrayList<>();
    try (PreparedStatement ps = c.prepareStatement(parents)) {
      ps.setObject(1, child);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          String state = rs.getString(3);
          out.add(new Parent(
              rs.getObject(1, UUID.class),
              rs.getString(4),
              rs.getString(2),
              state == null ? null : JobState.parse(state),
              rs.getString(5)));
        }
      }
    }
    return out;
  }

  /**
   * The jobs connected to {@code job} through edges either way, at most {@code max} (itself first, then
   * in the order the walk found them), their edges, and whether there were more. Empty jobs if it is
   * unknown. Three statements on {@code c}, run in one transaction by the caller for one snapshot.
   */
  public io.pgjobs.DependencyGraph graph(Connection c, UUID job, int max) throws SQLException {
    List<UUID> ids = new ArrayList<>();
    try (PreparedStatement ps = c.prepareStatement(graphIds)) {
      ps.setObject(1, job);
      ps.setInt(2, max + 1);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          ids.add(rs.getObject(1, UUID.class));
        }
      }
    }
    boolean truncated = ids.size() > max;
    if (truncated) {
      ids = ids.subList(0, max);
    }
    Map<UUID, io.pgjobs.DependencyGraph.Node> nodes = new HashMap<>();
    java.sql.Array idArray = c.createArrayOf("uuid", ids.toArray());
    try (PreparedStatement ps = c.prepareStatement(graphNodes)) {
      ps.setArray(1, idArray);
      ps.setArray(2, idArray);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          UUID id = rs.getObject(1, UUID.class);
          nodes.put(
              id,
              new io.pgjobs.DependencyGraph.Node(
                  id,
                  rs.getString(2),
                  JobState.parse(rs.getString(3)),
                  rs.getString(4),
                  rs.getString(5)));
        }
      }
    }
    List<io.pgjobs.DependencyGraph.Node> ordered = new ArrayList<>();
    for (UUID id : ids) {
      if (nodes.containsKey(id)) {
        ordered.add(nodes.get(id)); // a pruned job is left out (its edges with it)
      }
    }
    List<io.pgjobs.DependencyGraph.Edge> edges = new ArrayList<>();
    if (!ordered.isEmpty()) {
      java.sql.Array kept = c.createArrayOf(
          "uuid", ordered.stream().map(io.pgjobs.DependencyGraph.Node::id).toArray());
      try (PreparedStatement ps = c.prepareStatement(graphEdges)) {
        ps.setArray(1, kept);
        ps.setArray(2, kept);
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            String parentState = rs.getString(4);
            edges.add(new io.pgjobs.DependencyGraph.Edge(
                rs.getObject(1, UUID.class),
                rs.getObject(2, UUID.class),
                io.pgjobs.Dependency.OnFailure.valueOf(
                    rs.getString(3).toUpperCase(java.util.Locale.ROOT)),
                parentState == null ? null : JobState.parse(parentState)));
          }
        }
      }
    }
    return new io.pgjobs.DependencyGraph(List.copyOf(ordered), List.copyOf(edges), truncated);
  }
}
