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
  private final String insertEdges;
  private final String markParents;
  private final String endedParents;
  private final String resolveEnded;
  private final String blockWaiting;
  private final String cancelDoomed;
  private final String queueFired;
  private final String parents;

  /**
   * One edge to store: {@code child} waits for {@code parent}.
   *
   * @param parent the parent's id
   * @param child the child's id
   * @param onFailure {@code cancel}, {@code run} or {@code only}
   * @param childName the child's name in its graph, for error messages
   */
  public record Edge(UUID parent, UUID child, String onFailure, String childName) {}

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
    this.insertEdges = JobSql.forSchema(DependencySql.INSERT_EDGES, schema);
    this.markParents = JobSql.forSchema(DependencySql.MARK_PARENTS, schema);
    this.endedParents = JobSql.forSchema(DependencySql.ENDED_PARENTS, schema);
    this.resolveEnded = JobSql.forSchema(DependencySql.RESOLVE_ENDED, schema);
    this.blockWaiting = JobSql.forSchema(DependencySql.BLOCK_WAITING, schema);
    this.cancelDoomed = JobSql.forSchema(DependencySql.CANCEL_DOOMED, schema);
    this.queueFired = JobSql.forSchema(DependencySql.QUEUE_FIRED, schema);
    this.parents = JobSql.forSchema(DependencySql.PARENTS, schema);
  }

  /**
   * Links the jobs of a graph, just inserted on {@code c} in its open transaction: stores {@code edges},
   * marks their parents, resolves the edges from parents that had already ended, blocks the jobs that
   * wait and cancels those whose parent had already failed (with {@code cancel}). Throws
   * {@link InvalidJobException} for a parent that does not exist; the caller rolls back.
   *
   * @param graphIds the ids of the graph's jobs
   */
  public void link(Connection c, List<UUID> graphIds, List<Edge> edges) throws SQLException {
    if (edges.isEmpty()) {
      return;
    }
    UUID[] parentIds = new UUID[edges.size()];
    UUID[] childIds = new UUID[edges.size()];
    String[] policies = new String[edges.size()];
    for (int i = 0; i < edges.size(); i++) {
      parentIds[i] = edges.get(i).parent();
      childIds[i] = edges.get(i).child();
      policies[i] = edges.get(i).onFailure();
    }
    try (PreparedStatement ps = c.prepareStatement(insertEdges)) {
      ps.setArray(1, c.createArrayOf("uuid", parentIds));
      ps.setArray(2, c.createArrayOf("uuid", childIds));
      ps.setArray(3, c.createArrayOf("text", policies));
      ps.executeUpdate();
    }
    Set<UUID> distinctParents = new LinkedHashSet<>(List.of(parentIds));
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
        ps.setArray(3, c.createArrayOf("uuid", graphIds.toArray()));
        ps.executeUpdate();
      }
    }
    try (PreparedStatement ps = c.prepareStatement(blockWaiting)) {
      ps.setArray(1, c.createArrayOf("uuid", graphIds.toArray()));
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
}
