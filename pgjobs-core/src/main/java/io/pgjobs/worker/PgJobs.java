package io.pgjobs.worker;

import io.pgjobs.JobClient;
import io.pgjobs.JobType;
import io.pgjobs.json.PayloadCodec;
import io.pgjobs.maintenance.Maintenance;
import io.pgjobs.metrics.JobMetrics;
import io.pgjobs.recurring.RecurringStore;
import io.pgjobs.store.AdminStore;
import io.pgjobs.store.ExecutionStore;
import io.pgjobs.store.WorkerStore;
import io.pgjobs.tracing.JobTracing;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import javax.sql.DataSource;
import tools.jackson.databind.json.JsonMapper;

/**
 * The composition root of one pgjobs schema in one process: builds the parts a client, workers and
 * maintenance share (the payload codec, the tracing, the stores, one {@link JobClient}) once, from one
 * configuration, and hands them to each. A process that enqueues and runs jobs over one data source
 * builds one of these:
 *
 * <pre>{@code
 * PgJobs pgjobs = PgJobs.builder(dataSource).build();
 * JobClient client = pgjobs.client();
 * JobWorker worker = pgjobs.workerBuilder()
 *     .register(SEND_EMAIL, (ctx, email) -> { mailer.send(email); return null; })
 *     .build()
 *     .start();
 * }</pre>
 *
 * The worker's handlers then enqueue ({@link io.pgjobs.JobContext#enqueue}) through that same client.
 * {@link JobWorker#builder(DataSource)} is a front door onto a root of its own (built from the worker
 * builder's schema, mapper, metrics and tracing); {@link #over(JobClient)} makes a root around a client
 * built elsewhere (the Spring starter's bean). Settings, their defaults and ranges: {@link
 * io.pgjobs.config.PgJobsSettings}.
 */
public final class PgJobs {
  private final DataSource dataSource;
  private final String schema;
  private final JsonMapper mapper;
  private final PayloadCodec codec;
  private final JobTracing tracing;
  private final JobClient client;
  private final AdminStore adminStore;
  private final WorkerStore workerStore;
  private final RecurringStore recurringStore;

  private PgJobs(JobClient client) {
    this.client = client;
    this.dataSource = client.dataSource();
    this.schema = client.schema();
    this.mapper = client.jsonMapper();
    this.tracing = client.tracing();
    this.codec = new PayloadCodec(mapper);
    this.adminStore = new AdminStore(dataSource, schema, codec);
    this.workerStore = new WorkerStore(dataSource, schema, codec);
    this.recurringStore = new RecurringStore(dataSource, schema, client);
  }

  /** A builder over {@code dataSource} (use a pool, e.g. HikariCP, sized for the workers' concurrency). */
  public static Builder builder(DataSource dataSource) {
    return new Builder(dataSource);
  }

  /**
   * A root around {@code client}, built elsewhere: its data source, schema, mapper and tracing are the
   * root's, and the workers built from it enqueue through it.
   */
  public static PgJobs over(JobClient client) {
    return new PgJobs(Objects.requireNonNull(client, "client"));
  }

  /** The one client of this root: the application's, and the one handlers enqueue through. */
  public JobClient client() {
    return client;
  }

  /** The data source everything of this root runs on. */
  public DataSource dataSource() {
    return dataSource;
  }

  /** The pgjobs schema. */
  public String schema() {
    return schema;
  }

  /**
   * A worker builder over this root: its workers share this root's client, codec and stores. Its schema,
   * mapper and tracing are this root's (setting other ones on it is refused at build); the worker's own
   * settings (queues, handlers, intervals, maintenance, metrics of runs) are set on it as on {@link
   * JobWorker#builder(DataSource)}.
   */
  public JobWorker.Builder workerBuilder() {
    return new JobWorker.Builder(this);
  }

  /**
   * A builder of stand-alone maintenance (a process that runs no worker, e.g. an API server) over this
   * root's data source and schema; its recurring schedules fire through this root's client.
   */
  public Maintenance.Builder maintenanceBuilder() {
    return Maintenance.builder(dataSource).schema(schema).client(client);
  }

  JsonMapper mapper() {
    return mapper;
  }

  JobTracing tracing() {
    return tracing;
  }

  PayloadCodec codec() {
    return codec;
  }

  AdminStore adminStore() {
    return adminStore;
  }

  WorkerStore workerStore() {
    return workerStore;
  }

  RecurringStore recurringStore() {
    return recurringStore;
  }

  /** The claiming store of one worker: it claims only {@code types}, with {@code capabilities}. */
  ExecutionStore executionStore(List<String> capabilities, Set<String> types) {
    return new ExecutionStore(dataSource, schema, codec, capabilities, types);
  }

  /** Builder of {@link PgJobs}: the settings the client, workers and maintenance share. */
  public static final class Builder {
    private final JobClient.Builder client;

    private Builder(DataSource dataSource) {
      this.client = JobClient.builder(Objects.requireNonNull(dataSource, "dataSource"));
    }

    /** The pgjobs schema ({@link io.pgjobs.config.PgJobsSettings#SCHEMA}). */
    public Builder schema(String schema) {
      client.schema(schema);
      return this;
    }

    /** The Jackson mapper for payloads and outputs (default: ignores unknown properties). */
    public Builder jsonMapper(JsonMapper mapper) {
      client.jsonMapper(mapper);
      return this;
    }

    /** Where the client records enqueue counts (default: nowhere). */
    public Builder metrics(JobMetrics metrics) {
      client.metrics(metrics);
      return this;
    }

    /** Traces enqueues and job runs with {@code openTelemetry} (see {@link JobClient.Builder#openTelemetry}). */
    public Builder openTelemetry(io.opentelemetry.api.OpenTelemetry openTelemetry) {
      client.openTelemetry(openTelemetry);
      return this;
    }

    /** The client's known job types (see {@link JobClient.Builder#knownTypes(JobType[])}). */
    public Builder knownTypes(JobType<?>... types) {
      client.knownTypes(types);
      return this;
    }

    /** Same, from a collection. */
    public Builder knownTypes(Collection<? extends JobType<?>> types) {
      client.knownTypes(new ArrayList<>(types));
      return this;
    }

    /**
     * The client's known workflows, their job types among its known types (see
     * {@link JobClient.Builder#knownWorkflows(io.pgjobs.workflow.WorkflowType[])}). As with job types, a
     * workflow registered on a worker of this root ({@link JobWorker.Builder#workflow}) is known to the
     * root's client only if it is declared here too: declare the same {@code WorkflowType} constant on both.
     */
    public Builder knownWorkflows(io.pgjobs.workflow.WorkflowType<?>... workflows) {
      client.knownWorkflows(workflows);
      return this;
    }

    /** Same, from a collection. */
    public Builder knownWorkflows(
        Collection<? extends io.pgjobs.workflow.WorkflowType<?>> workflows) {
      client.knownWorkflows(new ArrayList<>(workflows));
      return this;
    }

    Builder tracing(JobTracing tracing) {
      if (tracing != null) {
        client.tracing(tracing);
      }
      return this;
    }

    /**
     * Validates and builds the shared parts.
     *
     * @throws IllegalArgumentException if the schema name is invalid
     */
    public PgJobs build() {
      return new PgJobs(client.build());
    }
  }
}
