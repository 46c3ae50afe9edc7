package io.pgjobs.store;

import java.util.ArrayList;
import java.util.List;

/**
 * For tests that EXPLAIN the claim: the statement {@link ExecutionStore#claim(String, int, String,
 * ClaimCursor)} would run, with its values written in as literals. Test code, so that the store carries
 * nothing that exists only for tests.
 */
public final class ExplainableClaim {
  private ExplainableClaim() {}

  /**
   * The claim {@code store} would run for {@code cursor}: the resumed claim if {@code cursor} knows a
   * level, else the full pass. Nothing is claimed.
   */
  public static String of(
      ExecutionStore store, String queue, int limit, String workerId, ClaimCursor cursor) {
    boolean full = cursor == null || cursor.positions().isEmpty();
    List<String> literals = new ArrayList<>();
    literals.add(literal(workerId));
    if (full) {
      for (int k = 0; k < 4; k++) {
        literals.add(literal(queue));
      }
    } else {
      ClaimCursor.ResumeParameters resume = cursor.resumeParameters();
      literals.add(literal(queue));
      literals.add(Integer.toString(resume.highestLevel()));
      literals.add(literal(resume.levels()));
      literals.add(literal(resume.runAts()));
      literals.add(literal(resume.ids()));
      literals.add(literal(queue));
      literals.add(literal(queue));
    }
    StringBuilder out = new StringBuilder();
    int next = 0;
    for (char ch : store.claimSql(full ? null : cursor).withLimit(limit).toCharArray()) {
      out.append(ch == '?' ? literals.get(next++) : String.valueOf(ch));
    }
    return out.toString();
  }

  /**
   * The limited claim ({@code claim_limited}) a worker without capabilities that runs every type would
   * make of {@code queue}: resumed from {@code cursor} if it knows a level, else a full pass. Nothing is
   * claimed if the caller rolls back.
   */
  public static String limited(String queue, int limit, String workerId, ClaimCursor cursor) {
    boolean full = cursor == null || cursor.positions().isEmpty();
    String positions;
    if (full) {
      positions = "NULL, NULL, NULL";
    } else {
      ClaimCursor.ResumeParameters resume = cursor.resumeParameters();
      positions = literal(resume.levels()) + "::int[], " + literal(resume.runAts())
          + "::text[]::timestamptz[], " + literal(resume.ids()) + "::uuid[]";
    }
    return "SELECT * FROM pgjobs.claim_limited(" + literal(workerId) + ", " + literal(queue) + ", "
        + limit + ", NULL, '{}', NULL, " + positions + ")";
  }

  private static String literal(String value) {
    return "'" + value.replace("'", "''") + "'";
  }
}
