package io.pgjobs;

import io.pgjobs.json.PayloadCodec;
import io.pgjobs.store.ExecutionStore;
import java.sql.SQLException;
import javax.sql.DataSource;

/**
 * Diagnostics: the query plans of a worker's claim, for an operator asking why claims are slow (and for
 * pgjobs-bench, which prints them for its scale workload). The claim runs for real, inside a transaction
 * that is rolled back, so nothing stays claimed.
 */
public final class ClaimPlan {
  private ClaimPlan() {}

  /**
   * {@code EXPLAIN (ANALYZE, BUFFERS)} of the claim of up to {@code limit} jobs of {@code queue} in
   * {@code schema} (the full pass from the low end of every priority level, of a worker that runs every
   * type and declares no capabilities), as a custom plan and as a generic plan (what a prepared statement
   * may switch to after five executions): both as text, each after a line {@code -- plan_cache_mode = …}.
   */
  public static String explain(DataSource dataSource, String schema, String queue, int limit)
      throws SQLException {
    return new ExecutionStore(dataSource, schema, new PayloadCodec(PayloadCodec.DEFAULT_MAPPER))
        .explainClaim(queue, limit);
  }
}
