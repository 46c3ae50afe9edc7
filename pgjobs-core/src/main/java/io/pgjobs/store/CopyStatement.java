package io.pgjobs.store;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.function.BiConsumer;
import org.postgresql.PGConnection;
import org.postgresql.copy.CopyIn;

/**
 * One {@code COPY ... FROM STDIN} of rows written by {@link CopyRows}, sent in chunks of about a megabyte:
 * the bulk path of the enqueue and of a graph's edges and names. A failure cancels the COPY, so that the
 * connection stays usable for the caller's rollback; a connection lost meanwhile is aborted, so that its
 * pool discards it ({@link BrokenConnections}: COPY runs below the pool's proxy).
 */
final class CopyStatement {
  private static final int CHUNK_CHARS = 1 << 20;

  private CopyStatement() {}

  /** Runs {@code sql} on {@code connection}, {@code rows} rows, row {@code i} written by {@code row}. */
  static void copy(Connection connection, String sql, int rows, BiConsumer<Integer, CopyRows> row)
      throws SQLException {
    CopyIn copy = null;
    try {
      copy = connection.unwrap(PGConnection.class).getCopyAPI().copyIn(sql);
      CopyRows out = new CopyRows();
      for (int i = 0; i < rows; i++) {
        row.accept(i, out);
        out.endRow();
        if (out.length() >= CHUNK_CHARS) {
          byte[] chunk = out.drain();
          copy.writeToCopy(chunk, 0, chunk.length);
        }
      }
      byte[] chunk = out.drain();
      if (chunk.length > 0) {
        copy.writeToCopy(chunk, 0, chunk.length);
      }
      copy.endCopy();
    } catch (Throwable e) {
      if (copy != null && copy.isActive()) {
        try {
          copy.cancelCopy(); // the connection stays usable for the caller's rollback
        } catch (SQLException | RuntimeException cancel) {
          e.addSuppressed(cancel); // the failure that stopped the COPY is the one to report
        }
      }
      if (BrokenConnections.connectionLost(e)) {
        BrokenConnections.discard(connection, e);
      }
      throw e;
    }
  }
}
