package io.pgjobs.spring;

import io.pgjobs.CancelResult;
import io.pgjobs.EnqueueOptions;
import io.pgjobs.EnqueuedJob;
import io.pgjobs.JobClient;
import io.pgjobs.JobType;
import io.pgjobs.PgJobsException;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Collection;
import java.util.List;
import java.util.UUID;
import java.util.function.Function;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * Enqueues jobs in Spring's current transaction. Inside {@code @Transactional} (or a
 * {@code TransactionTemplate}) the job is written on the transaction's own connection, found with
 * {@link DataSourceUtils#getConnection(DataSource)}: it exists only if that transaction commits, and a
 * worker can see it only after the commit. Outside a transaction each call stands alone, as
 * {@link JobClient}'s do.
 *
 * <pre>{@code
 * @Transactional
 * public void placeOrder(Order order) {
 *   orders.insert(order);
 *   jobs.enqueue(SEND_RECEIPT, new SendReceipt(order.id()));   // rolled back with the order
 * }
 * }</pre>
 *
 * The transaction must be one on the same {@link DataSource} as pgjobs' (Spring's
 * {@code DataSourceTransactionManager} or {@code JpaTransactionManager} over the application's data
 * source): a transaction on another data source is not joined.
 */
public final class TransactionalJobClient {
  private final JobClient client;
  private final DataSource dataSource;

  /** Enqueues through {@code client} on connections of {@code dataSource} (the client's). */
  public TransactionalJobClient(JobClient client, DataSource dataSource) {
    this.client = client;
    this.dataSource = dataSource;
  }

  /** The plain client: its calls never join a transaction. */
  public JobClient client() {
    return client;
  }

  /** Enqueues a job with the type's defaults, in the current transaction if there is one. */
  public <P> EnqueuedJob enqueue(JobType<P> type, P payload) {
    return enqueue(type, payload, EnqueueOptions.DEFAULTS);
  }

  /** Enqueues a job, in the current transaction if there is one. */
  public <P> EnqueuedJob enqueue(JobType<P> type, P payload, EnqueueOptions options) {
    return inTransaction(
        c -> client.enqueue(c, type, payload, options),
        () -> client.enqueue(type, payload, options));
  }

  /** Enqueues a job by type name, in the current transaction if there is one. */
  public EnqueuedJob enqueue(String type, Object payload, EnqueueOptions options) {
    return inTransaction(
        c -> client.enqueue(c, type, payload, options),
        () -> client.enqueue(type, payload, options));
  }

  /** Enqueues many jobs of one type (all or none), in the current transaction if there is one. */
  public <P> List<UUID> enqueueAll(
      JobType<P> type, Collection<? extends P> payloads, EnqueueOptions options) {
    return inTransaction(
        c -> client.enqueueAll(c, type, payloads, options),
        () -> client.enqueueAll(type, payloads, options));
  }

  /** Cancels a job, in the current transaction if there is one. */
  public CancelResult cancel(UUID id) {
    return inTransaction(c -> client.cancel(c, id), () -> client.cancel(id));
  }

  private <T> T inTransaction(Function<Connection, T> joined, Supplier<T> alone) {
    if (!TransactionSynchronizationManager.isActualTransactionActive()) {
      // No transaction (or only a synchronization, e.g. PROPAGATION_SUPPORTS): the client's own, on
      // a connection of its own. Joining a connection that merely has auto-commit off (a pool tuned
      // so) would enqueue into a transaction nobody commits.
      return alone.get();
    }
    Connection connection = DataSourceUtils.getConnection(dataSource);
    boolean autoCommit;
    try {
      autoCommit = connection.getAutoCommit();
    } catch (SQLException e) {
      DataSourceUtils.releaseConnection(connection, dataSource);
      throw new PgJobsException("database error: " + e.getMessage(), e);
    }
    if (autoCommit) {
      // Synchronization without a database transaction (e.g. PROPAGATION_SUPPORTS): nothing to
      // join, and enqueueAll must stay atomic in a transaction of its own.
      DataSourceUtils.releaseConnection(connection, dataSource);
      return alone.get();
    }
    try {
      return joined.apply(connection);
    } finally {
      DataSourceUtils.releaseConnection(connection, dataSource);
    }
  }
}
