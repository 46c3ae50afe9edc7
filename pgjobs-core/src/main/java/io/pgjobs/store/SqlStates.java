package io.pgjobs.store;

import java.sql.SQLException;
import java.util.ArrayDeque;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;
import java.util.function.Predicate;

/** Reads the SQLStates of a failure wherever the driver or a pool put them. */
public final class SqlStates {
  private SqlStates() {}

  /**
   * True if {@code failure}, or any exception chained to it (cause, SQL next exception, suppressed), is an
   * {@link SQLException} whose SQLState {@code matches}. Cycles are followed once; at most 50 are looked at.
   */
  public static boolean anyInChain(Throwable failure, Predicate<String> matches) {
    ArrayDeque<Throwable> todo = new ArrayDeque<>();
    Set<Throwable> seen = Collections.newSetFromMap(new IdentityHashMap<>());
    todo.add(failure);
    while (!todo.isEmpty() && seen.size() < 50) {
      Throwable t = todo.poll();
      if (!seen.add(t)) {
        continue;
      }
      if (t instanceof SQLException sql) {
        String state = sql.getSQLState();
        if (state != null && matches.test(state)) {
          return true;
        }
        if (sql.getNextException() != null) {
          todo.add(sql.getNextException());
        }
      }
      if (t.getCause() != null) {
        todo.add(t.getCause());
      }
      todo.addAll(List.of(t.getSuppressed()));
    }
    return false;
  }
}
