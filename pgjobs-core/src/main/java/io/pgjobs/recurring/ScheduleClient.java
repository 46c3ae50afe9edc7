package io.pgjobs.recurring;

import io.pgjobs.EnqueueOptions;
import io.pgjobs.EnqueuedJob;
import io.pgjobs.JobType;
import java.sql.Connection;
import java.util.Map;
import javax.sql.DataSource;

/**
 * What {@link RecurringSchedules} needs of a client: its database and schema, the job types it knows (a known
 * type gives a schedule its queue, priority and max attempts, and checks its payload), and an enqueue in the
 * caller's transaction (a schedule run by hand). {@code io.pgjobs.JobClient} is one; the schedules depend on
 * this, not on the client, so the client can hand out its schedules without the two depending on each other.
 */
public interface ScheduleClient {
  /** The pgjobs schema. */
  String schema();

  /** The application's data source. */
  DataSource dataSource();

  /** The job types this client knows, by name. */
  Map<String, JobType<?>> knownTypes();

  /**
   * Enqueues a job of type {@code type} (by name) on {@code connection}, in its transaction.
   *
   * @throws io.pgjobs.InvalidPayloadException if the payload does not fit a known type
   */
  EnqueuedJob enqueue(Connection connection, String type, Object payload, EnqueueOptions options);
}
