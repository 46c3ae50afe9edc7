package io.pgjobs;

import io.pgjobs.json.PayloadCodec;
import io.pgjobs.metrics.JobMetrics;
import io.pgjobs.schema.Migrator;
import io.pgjobs.store.AdminStore;
import io.pgjobs.store.AutoCommitDataSource;
import io.pgjobs.store.Channels;
import io.pgjobs.store.EnqueueStore;
import io.pgjobs.store.NewJob;
import io.pgjobs.store.StreamedJobs;
import io.pgjobs.store.UuidV7;
import io.pgjobs.store.WorkerStore;
import io.pgjobs.tracing.JobTracing;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import javax.sql.DataSource;
import tools.jackson.databind.json.JsonMapper;

/**
 * Enqueues, finds and manages jobs. Thread-safe; create one per application and share it.
 *
 * <pre>{@code
 * JobClient client = JobClient.builder(dataSource).build();
 * client.migrate();                                   // creates or updates the pgjobs schema
 * EnqueuedJob job = client.enqueue(SEND_EMAIL, new SendEmail("a@example.com", "Hi", "Welcome"));
 *
 * try (Connection tx = dataSource.getConnection()) {   // in the business transaction
 *   tx.setAutoCommit(false);
 *   insertOrder(tx, order);
 *   client.enqueue(tx, SEND_RECEIPT, new SendReceipt(order.id()), EnqueueOptions.DEFAULTS);
 *   tx.commit();                                      // the job exists only if the order does
 * }
 * }</pre>
 *
 * Every mutation has a twin taking a {@link Connection}: it runs in that connection's transaction and
 * leaves committing to the caller.
 */
public final class JobClient implements io.pgjobs.recurring.ScheduleClient {
  /** Schema used when none is given ({@link io.pgjobs.config.PgJobsSettings#SCHEMA}). */
  public static final String DEFAULT_SCHEMA = io.pgjobs.config.PgJobsSettings.SCHEMA.defaultValue();

  private final DataSource dataSource;
  /** {@link #dataSource} as pgjobs borrows from it: in auto-commit mode whatever the pool's default. */
  private final DataSource borrowed;

  private final EnqueueStore enqueueStore;
  private final AdminStore adminStore;
  private final WorkerStore workerStore;
  private final io.pgjobs.store.LimitsStore limitsStore;
  private final io.pgjobs.store.DependencyStore dependencyStore;
  private final io.pgjobs.store.WorkflowStore workflowStore;
  private final PartitionRules partitionRules;
  private final PayloadCodec codec;
  private final JobMetrics metrics;
  private final Map<String, JobType<?>> knownTypes;
  private final Map<String, io.pgjobs.workflow.WorkflowType<?>> knownWorkflows;
  private final JobTracing tracing;
  private final JsonMapper mapper;

  private JobClient(Builder builder) {
    this.mapper = builder.mapper;
    this.dataSource = builder.dataSource;
    this.borrowed = AutoCommitDataSource.of(builder.dataSource);
    this.codec = new PayloadCodec(builder.mapper);
    this.enqueueStore = new EnqueueStore(builder.dataSource, builder.schema, codec);
    this.adminStore = new AdminStore(builder.dataSource, builder.schema, codec);
    this.workerStore = new WorkerStore(builder.dataSource, builder.schema, codec);
    this.limitsStore = new io.pgjobs.store.LimitsStore(builder.dataSource, builder.schema);
    this.dependencyStore = new io.pgjobs.store.DependencyStore(builder.schema);
    this.workflowStore = new io.pgjobs.store.WorkflowStore(builder.dataSource, builder.schema);
    this.partitionRules = new PartitionRules(limitsStore, builder.mapper);
    this.metrics = builder.metrics;
    this.knownTypes = Map.copyOf(builder.knownTypes);
    this.knownWorkflows = Map.copyOf(builder.knownWorkflows);
    this.tracing = builder.tracing != null ? builder.tracing : JobTracing.detect();
  }

  /** A builder over {@code dataSource} (use a pool, e.g. HikariCP). */
  public static Builder builder(DataSource dataSource) {
    return new Builder(dataSource);
  }

  /**
   * Creates the schema if needed and applies pending migrations; safe to call from many processes.
   *
   * @throws PgJobsException if the schema was created by a pre-release pgjobs, whose migration history was
   *     reset before the first release: it cannot be upgraded, the message gives the SQL to drop it, and
   *     nothing was changed
   */
  public void migrate() {
    Migrator.migrate(dataSource, adminStore.schema());
  }

  /** The Jackson mapper of payloads and outputs this client was built with. */
  public JsonMapper jsonMapper() {
    return mapper;
  }

  /**
   * Internal: the tracing this client's enqueues use, shared with a worker built over it ({@code
   * PgJobs.over(client)}); applications set it with {@link Builder#openTelemetry}.
   */
  public JobTracing tracing() {
    return tracing;
  }

  /** The pgjobs schema name. */
  public String schema() {
    return adminStore.schema();
  }

  /** The job types this client was told about, by name (the known workflows' job types among them). */
  public Map<String, JobType<?>> knownTypes() {
    return knownTypes;
  }

  /**
   * The workflows this client was told about ({@link Builder#knownWorkflows}), by name: what an
   * {@code ApiServer} over this client lists ({@code GET /workflow-types}), lists the runs of
   * ({@code GET /workflows}) and starts by name. Empty if it was told of none.
   */
  public Map<String, io.pgjobs.workflow.WorkflowType<?>> knownWorkflows() {
    return knownWorkflows;
  }

  // ---------------------------------------------------------------- enqueue

  /** Enqueues a job with the type's defaults. */
  public <P> EnqueuedJob enqueue(JobType<P> type, P payload) {
    return enqueue(type, payload, EnqueueOptions.DEFAULTS);
  }

  /**
   * Enqueues a job; {@code options} override the type's defaults. The job is stored when this returns.
   * If it throws {@link EnqueueOutcomeUnknownException}, the connection was lost while the INSERT (which
   * commits on its own) was under way: the job may be stored or not. Call again with the same
   * idempotency key (and request) to store it exactly once; any other failure stored nothing.
   */
  public <P> EnqueuedJob enqueue(JobType<P> type, P payload, EnqueueOptions options) {
    NewJob job = newJob(type, payload, options);
    return traced(job, null);
  }

  /** Enqueues a job in the caller's transaction: it exists only if that transaction commits. */
  public <P> EnqueuedJob enqueue(
      Connection connection, JobType<P> type, P payload, EnqueueOptions options) {
    NewJob job = newJob(type, payload, options);
    return traced(job, Objects.requireNonNull(connection, "connection"));
  }

  /**
   * Enqueues a job by type name with any JSON-serialisable payload (a {@code Map}, a {@code JsonNode},
   * a record). A type this client knows (see {@link Builder#knownTypes}) gets its defaults, and the
   * payload must read into its payload class; an unknown type is accepted with the pgjobs defaults,
   * since another service may run it. Fails as {@link #enqueue(JobType, Object, EnqueueOptions)} does,
   * {@link EnqueueOutcomeUnknownException} included.
   */
  public EnqueuedJob enqueue(String type, Object payload, EnqueueOptions options) {
    NewJob job = newJobByName(type, payload, options);
    return traced(job, null);
  }

  /** {@link #enqueue(String, Object, EnqueueOptions)} in the caller's transaction. */
  public EnqueuedJob enqueue(
      Connection connection, String type, Object payload, EnqueueOptions options) {
    NewJob job = newJobByName(type, payload, options);
    return traced(job, Objects.requireNonNull(connection, "connection"));
  }

  /**
   * Enqueues many jobs of one type in one round trip (PostgreSQL COPY), all with the same options.
   * All or none are stored. An idempotency key in {@code options} is refused (one key cannot name many
   * jobs); a type that takes its key from each payload ({@link JobType#withIdempotencyKeyFrom}) gives
   * every job its own: the keys go in first (one statement), the jobs whose keys are new by COPY, and a
   * payload whose key was already used gets the job that key names (a different request under it is
   * refused with {@link IdempotencyKeyReusedException}, and nothing is stored). Unique jobs
   * ({@link EnqueueOptions.Builder#unique} or the type's {@link JobType#withUnique}) are accepted too: each
   * payload's job is the new one or the existing one that holds its key, and payloads with equal keys in
   * one call become one job (one INSERT statement instead of COPY).
   *
   * <p>Without keys or unique jobs, each payload is checked and encoded as the COPY sends its row, while
   * the server stores the rows sent before it: a payload refused ({@link InvalidJobException}) then
   * cancels the COPY, and its transaction is rolled back.
   *
   * <p>A call that throws stored none of the jobs, except when it throws
   * {@link EnqueueOutcomeUnknownException}: the connection was lost while the COMMIT was under way, and
   * the server may have committed (the whole batch) before the answer was lost. Call again with the same
   * payloads: with keys from the payloads each job is then stored exactly once. The exception's cause is
   * the error that broke the enqueue; a rollback that failed after it is attached to that cause as
   * suppressed.
   *
   * @return the jobs' ids, in the order of {@code payloads} (for unique jobs, the id of the job that
   *     stands for each payload, new or existing; for keyed jobs, the job each key names)
   */
  public <P> List<UUID> enqueueAll(
      JobType<P> type, Collection<? extends P> payloads, EnqueueOptions options) {
    List<NewJob> jobs = streamedJobs(type, payloads, options);
    EnqueueStore.UniqueBatch batch = tracedAll(jobs, null);
    metrics.enqueued(type.name(), batch.inserted());
    return batch.ids();
  }

  /**
   * {@link #enqueueAll(JobType, Collection, EnqueueOptions)} in the caller's transaction. If the
   * connection is lost during the COPY, it is aborted (closed) before this throws, so that its pool
   * discards it rather than handing it out again; the transaction is lost either way. After any other
   * failure roll the transaction back: with keys from the payloads, a refused key
   * ({@link IdempotencyKeyReusedException}) is found after the batch's rows went in.
   */
  public <P> List<UUID> enqueueAll(
      Connection connection,
      JobType<P> type,
      Collection<? extends P> payloads,
      EnqueueOptions options) {
    List<NewJob> jobs = newJobs(type, payloads, options);
    EnqueueStore.UniqueBatch batch =
        tracedAll(jobs, Objects.requireNonNull(connection, "connection"));
    metrics.enqueued(type.name(), batch.inserted());
    return batch.ids();
  }

  /**
   * Enqueues a graph of jobs that wait for one another ({@link JobGraph}), all or none, in a transaction
   * of its own. Jobs with parents not ended yet are {@link JobState#BLOCKED} until they end; a job whose
   * parent had already failed or been cancelled (and whose dependency does not run anyway) is cancelled at
   * once. If the COMMIT's answer is lost, this throws {@link EnqueueOutcomeUnknownException}: enqueue the
   * same graph again under the same {@link JobGraph.Builder#idempotencyKey idempotency key} to store it
   * exactly once (without a key, look its jobs up first).
   *
   * <p>Without a key, each job is made as the COPY sends it and not kept: beyond the graph itself, the
   * call holds about 90 bytes a job (the ids it returns), so the largest graph, {@link JobGraph#MAX_JOBS}
   * jobs, goes in from a 512 MB heap. A payload refused then is found mid-COPY: the COPY is cancelled and
   * the transaction rolled back, nothing is stored.
   *
   * @return each job's id by its name in the graph, in the order the jobs were added, and whether the
   *     key replayed an earlier enqueue
   * @throws IdempotencyKeyReusedException when the key already enqueued a different graph
   * @throws InvalidJobException for a payload or option refused, or a parent id that names no job
   */
  public EnqueuedGraph enqueueGraph(JobGraph graph) {
    Objects.requireNonNull(graph, "graph");
    return withConnection(c -> {
      boolean autoCommit = c.getAutoCommit();
      c.setAutoCommit(false);
      try {
        EnqueuedGraph ids = insertGraph(c, graph, true);
        try {
          c.commit();
        } catch (SQLException e) {
          if (io.pgjobs.store.BrokenConnections.connectionLost(e)) {
            throw EnqueueStore.outcomeUnknown(e);
          }
          throw e;
        }
        return ids;
      } catch (Throwable e) {
        try {
          c.rollback();
        } catch (SQLException | RuntimeException rollback) {
          e.addSuppressed(rollback);
        }
        throw e;
      } finally {
        try {
          c.setAutoCommit(autoCommit);
        } catch (SQLException ignored) {
          // A broken connection: its pool drops it.
        }
      }
    });
  }

  /**
   * {@link #enqueueGraph(JobGraph)} in the caller's transaction: the jobs and their dependencies exist
   * only if it commits. The parents enqueued before that the graph waits for are locked until then.
   */
  public EnqueuedGraph enqueueGraph(Connection connection, JobGraph graph) {
    Objects.requireNonNull(graph, "graph");
    Objects.requireNonNull(connection, "connection");
    return call(() -> insertGraph(connection, graph, false));
  }

  /**
   * The graph's jobs by COPY (as {@link #enqueueAll}: one round trip whatever their number, each row with
   * its own type and options), then its edges ({@link io.pgjobs.store.DependencyStore#link}), on
   * {@code c} in its open transaction.
   *
   * <p>In a transaction of its own ({@code ownTransaction}) and without an idempotency key, each job is
   * made (its payload encoded and checked) as the COPY reads it and then let go, and each edge as its
   * COPY reads it: at the limit of {@link JobGraph#MAX_JOBS} jobs and their two million edges, holding
   * them all on top of the caller's graph took another ~450 MB of heap. A job that cannot be made throws
   * in the middle of the COPY, which is cancelled; the transaction rolls back, nothing is stored. In the
   * caller's transaction (which such a failure would leave aborted) or under a key (whose fingerprint
   * reads every job first) the jobs are made and checked before anything is sent.
   */
  private EnqueuedGraph insertGraph(Connection c, JobGraph graph, boolean ownTransaction)
      throws SQLException {
    List<JobGraph.Node> nodes = graph.nodes();
    int n = nodes.size();
    // Each job goes in as the graph places it: blocked with its count of parents in the graph, and
    // marked if a job of the graph waits for it; parents enqueued before (Dependency.onJob) are
    // counted by link().
    int[] waitingOn = new int[n];
    int[] firstEdge = new int[n + 1];
    boolean[] hasDependents = new boolean[n];
    boolean dueNow = true;
    {
      Set<String> parentsInGraph = new java.util.HashSet<>();
      for (int i = 0; i < n; i++) {
        JobGraph.Node node = nodes.get(i);
        for (Dependency d : node.after()) {
          if (d.node() != null) {
            waitingOn[i]++;
            parentsInGraph.add(d.node());
          }
        }
        firstEdge[i + 1] = firstEdge[i] + node.after().size();
        EnqueueOptions o = node.options();
        dueNow &=
            o == null || (o.runAt() == null && (o.delay() == null || o.delay().toMillis() == 0));
      }
      for (int i = 0; i < n; i++) {
        hasDependents[i] = parentsInGraph.contains(nodes.get(i).name());
      }
    }
    List<io.pgjobs.store.EnqueueStore.GraphPlacement> placements = new java.util.AbstractList<>() {
      @Override
      public io.pgjobs.store.EnqueueStore.GraphPlacement get(int i) {
        return new io.pgjobs.store.EnqueueStore.GraphPlacement(waitingOn[i], hasDependents[i]);
      }

      @Override
      public int size() {
        return n;
      }
    };
    Map<String, UUID> ids = java.util.LinkedHashMap.newLinkedHashMap(n);
    Map<String, Integer> enqueuedByType = new java.util.HashMap<>();
    List<NewJob> jobs;
    if (ownTransaction && graph.idempotencyKey() == null) {
      jobs = io.pgjobs.store.StreamedJobs.readOnce(
          n,
          i -> {
            JobGraph.Node node = nodes.get(i);
            NewJob job = graphJob(node);
            ids.put(node.name(), job.id());
            enqueuedByType.merge(job.type(), 1, Integer::sum);
            return job;
          },
          dueNow);
    } else {
      List<NewJob> made = new ArrayList<>(n);
      for (JobGraph.Node node : nodes) {
        NewJob job = graphJob(node);
        made.add(job);
        ids.put(node.name(), job.id());
        enqueuedByType.merge(job.type(), 1, Integer::sum);
      }
      jobs = made;
      if (graph.idempotencyKey() != null) {
        EnqueuedGraph replayed = takeGraphKey(c, graph, made, ids);
        if (replayed != null) {
          return replayed;
        }
      }
    }
    enqueueStore.insertGraph(c, partitionRules.keyed(jobs, c), placements);
    enqueuedByType.forEach(metrics::enqueued);
    // The edges in the nodes' order, each made as the COPY reads it (node i's are firstEdge[i]...).
    List<io.pgjobs.store.DependencyStore.Edge> edges = new java.util.AbstractList<>() {
      @Override
      public io.pgjobs.store.DependencyStore.Edge get(int k) {
        int i = java.util.Arrays.binarySearch(firstEdge, k);
        if (i < 0) {
          i = -i - 2; // the node whose edges start before k
        } else {
          while (firstEdge[i + 1] == k) {
            i++; // nodes without parents share their start with the next one
          }
        }
        JobGraph.Node node = nodes.get(i);
        Dependency d = node.after().get(k - firstEdge[i]);
        return new io.pgjobs.store.DependencyStore.Edge(
            d.node() != null ? ids.get(d.node()) : d.job(),
            ids.get(node.name()),
            d.onFailure().value(),
            node.name(),
            d.node() != null);
      }

      @Override
      public int size() {
        return firstEdge[n];
      }
    };
    dependencyStore.link(c, ids, edges);
    return new EnqueuedGraph(java.util.Collections.unmodifiableMap(ids), false);
  }

  /** The job a graph's node makes, its errors named after the node ("graph[resize].payload.width"). */
  private NewJob graphJob(JobGraph.Node node) {
    NewJob job;
    try {
      job = node.type() != null
          ? newJobUnchecked(node.type(), node.payload(), node.options())
          : newJobByName(node.typeName(), node.payload(), node.options());
    } catch (InvalidJobException e) {
      String message = e.getMessage().startsWith(e.field() + ": ")
          ? e.getMessage().substring(e.field().length() + 2)
          : e.getMessage();
      throw new InvalidJobException("graph[" + node.name() + "]." + e.field(), message, e);
    }
    if (job.unique() != null || job.idempotencyKey() != null) {
      // A type known by name may bring either from its defaults.
      throw new InvalidJobException(
          "graph[" + node.name() + "].unique",
          "type '" + job.type() + "' makes unique or keyed jobs, which a graph does not take:"
              + " a job that stands for another could not wait as the graph says");
    }
    return job;
  }

  /**
   * Takes the graph's idempotency key for these jobs, or returns what an earlier enqueue under it made
   * (null: the key was free, and is now this graph's).
   */
  private EnqueuedGraph takeGraphKey(
      Connection c, JobGraph graph, List<NewJob> jobs, Map<String, UUID> ids) throws SQLException {
    StringBuilder what = new StringBuilder("graph v1\n");
    for (int i = 0; i < jobs.size(); i++) {
      JobGraph.Node node = graph.nodes().get(i);
      what.append(node.name())
          .append('\n')
          .append(IdempotencyFingerprint.of(
              jobs.get(i).type(), jobs.get(i).payloadJson(), node.options()))
          .append('\n');
      for (Dependency d : node.after()) {
        what.append(d.node() != null ? "node " + d.node() : "job " + d.job())
            .append(' ')
            .append(d.onFailure().value())
            .append('\n');
      }
    }
    String fingerprint = IdempotencyFingerprint.sha256(what.toString());
    io.pgjobs.store.DependencyStore.GraphKey taken = dependencyStore.takeGraphKey(
        c, graph.idempotencyKey(), fingerprint, jobs.get(0).id(), mapper.writeValueAsString(ids));
    if (taken == null) {
      return null;
    }
    if (!taken.fingerprint().equals(fingerprint)) {
      throw new IdempotencyKeyReusedException(graph.idempotencyKey(), taken.firstJob());
    }
    Map<String, UUID> first = new java.util.LinkedHashMap<>();
    mapper
        .readTree(taken.jobsJson())
        .properties()
        .forEach(e -> first.put(e.getKey(), UUID.fromString(e.getValue().asString())));
    return new EnqueuedGraph(java.util.Collections.unmodifiableMap(first), true);
  }

  /**
   * Sends signal {@code name} with {@code payload} (JSON-serialisable) to workflow run {@code runId}: what
   * its {@code ctx.awaitSignal(name, ...)} waits for. The first signal of a name counts; a later one is not
   * stored. A run waiting for it (its job asleep) is made due at once; a run still executing finds it when
   * it reaches the wait. If the run is in the moment between looking for the signal and going to sleep,
   * this waits for it to sleep (5 s at most) and then wakes it.
   *
   * @return true if the signal was stored, false if one of that name had come before
   */
  public boolean signalWorkflow(UUID runId, String name, Object payload) {
    Objects.requireNonNull(runId, "runId");
    if (name == null
        || name.isEmpty()
        || name.length() > 200
        || name.startsWith("(")
        || name.indexOf('\u0000') >= 0) {
      throw new InvalidJobException(
          "name",
          "a signal's name is 1 to 200 characters, not starting with '(' (pgjobs' own), without"
              + " U+0000, was " + (name == null ? "null" : name.length() + " characters"));
    }
    return signalQuietly(runId, name, codec.encodePayload(payload));
  }

  /** Stores a signal (JSON text) and wakes the run, waiting up to 5 s for one that is executing. */
  private boolean signalQuietly(UUID runId, String name, String json) {
    return call(() -> {
      boolean stored = workflowStore.signal(runId, name, json);
      long until = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(5);
      while ("running".equals(workflowStore.wake(runId)) && System.nanoTime() < until) {
        try {
          Thread.sleep(
              50); // the run is executing: it finds the signal, or goes to sleep within moments
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          break;
        }
      }
      return stored;
    });
  }

  /**
   * Cancels workflow run {@code runId} with compensation: a marker is stored beside its steps and, if it
   * sleeps or waits for a signal, it is made due at once; its next execution replays its recorded steps
   * (registering their compensations), stops at the first step that has not run, compensates the done
   * ones, the last first, and ends the run {@code cancelled}. An execution under way sees the marker at
   * its next step, sleep or wait, and does the same (a run between its look and its sleep is waited for,
   * 5 s at most, as {@link #signalWorkflow} does). ({@link #cancel(UUID)} on a waiting run would end it at
   * once, without compensating.)
   *
   * @return true if the cancellation was asked now, false if it had been asked before
   * @throws InvalidJobException naming {@code id} if the run has ended or does not exist
   */
  public boolean cancelWorkflow(UUID runId) {
    Objects.requireNonNull(runId, "runId");
    Optional<Job> run = get(runId);
    if (run.isEmpty() || run.get().state().isTerminal()) {
      throw new InvalidJobException("id", "workflow run " + runId + " has ended or does not exist");
    }
    // A marker signal: an execution under way sees it before it sleeps, a sleeping run is woken to
    // see it.
    return signalQuietly(runId, "(cancel)", "true");
  }

  /** The recorded steps of workflow run {@code runId}, in the order they first ran (none: an unknown run). */
  public List<io.pgjobs.workflow.WorkflowStep> workflowSteps(UUID runId) {
    Objects.requireNonNull(runId, "runId");
    return call(() -> workflowStore.steps(runId)).stream()
        .map(r -> new io.pgjobs.workflow.WorkflowStep(
            r.name(), r.kind(), r.state(), r.result(), r.error(), r.seq(), r.finishedAt()))
        .toList();
  }

  /** The most jobs {@link #dependencyGraph} reads: {@value}. */
  public static final int MAX_GRAPH_JOBS = 500;

  /**
   * The jobs connected to {@code job} through dependencies, either way ({@link JobGraph}), with their
   * states and edges: at most {@code maxJobs} (1 to {@value #MAX_GRAPH_JOBS}), {@code job} first. Read in
   * one snapshot. A job without dependencies is a graph of one; an unknown job, a graph of none.
   */
  public DependencyGraph dependencyGraph(UUID job, int maxJobs) {
    Objects.requireNonNull(job, "job");
    if (maxJobs < 1 || maxJobs > MAX_GRAPH_JOBS) {
      throw new IllegalArgumentException(
          "maxJobs must be between 1 and " + MAX_GRAPH_JOBS + ", was " + maxJobs);
    }
    return withConnection(c -> {
      boolean autoCommit = c.getAutoCommit();
      int isolation = c.getTransactionIsolation();
      c.setAutoCommit(false);
      c.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
      try {
        DependencyGraph graph = dependencyStore.graph(c, job, maxJobs);
        c.commit();
        return graph;
      } catch (SQLException | RuntimeException e) {
        try {
          c.rollback();
        } catch (SQLException rollback) {
          e.addSuppressed(rollback);
        }
        throw e;
      } finally {
        c.setTransactionIsolation(isolation);
        c.setAutoCommit(autoCommit);
      }
    });
  }

  @SuppressWarnings("unchecked")
  private <P> NewJob newJobUnchecked(JobType<P> type, Object payload, EnqueueOptions options) {
    return newJob(type, (P) payload, options);
  }

  /**
   * The jobs {@code job} waits for or waited for ({@link JobGraph}), with how each ended, its output if
   * it succeeded with one: what a job of a graph reads of its parents. Empty for a job without parents.
   */
  public List<JobParent> parents(UUID job) {
    Objects.requireNonNull(job, "job");
    return withConnection(c -> dependencyStore.parents(c, job)).stream()
        .map(p -> new JobParent(
            p.id(),
            p.type(),
            Dependency.OnFailure.valueOf(p.onFailure().toUpperCase(java.util.Locale.ROOT)),
            p.state(),
            p.output()))
        .toList();
  }

  // ---------------------------------------------------------------- read and manage

  /** The job with this id, running or finished (finished jobs are kept for the retention period). */
  public Optional<Job> get(UUID id) {
    return call(() -> adminStore.get(id));
  }

  /**
   * The ids of the jobs that job {@code parent}'s handler enqueued ({@link JobContext#enqueue}), oldest
   * first, at most {@code limit} (1 to 1000).
   */
  public List<UUID> children(UUID parent, int limit) {
    if (limit < 1 || limit > 1000) {
      throw new IllegalArgumentException("limit must be between 1 and 1000, was " + limit);
    }
    return call(() -> adminStore.children(parent, limit));
  }

  /** A page of jobs matching {@code filter}, newest first. */
  public JobPage list(JobFilter filter) {
    return call(() -> adminStore.list(filter));
  }

  /** Job counts per queue and state, queues in name order. */
  public List<QueueCounts> countByQueue() {
    return call(adminStore::countByQueue);
  }

  /**
   * Cancels a job. A waiting job (queued, scheduled, retrying) ends {@code cancelled} at once; a running
   * job gets its cancel flag set and its worker interrupts the handler, which sees
   * {@link JobContext#isCancelled()}, and then ends it {@code cancelled}; a finished job is left alone.
   */
  public CancelResult cancel(UUID id) {
    return withConnection(c -> adminStore.cancel(c, id));
  }

  /** {@link #cancel(UUID)} in the caller's transaction. */
  public CancelResult cancel(Connection connection, UUID id) {
    return call(() -> adminStore.cancel(connection, id));
  }

  /**
   * Cancels every waiting or running job of the given types and queues in one statement (an empty set
   * matches any). {@code states} narrows it to some of {@code queued}, {@code retrying}, {@code running}.
   *
   * @throws InvalidJobException if {@code states} names a finished state
   */
  public CancelCounts cancelAll(Set<String> types, Set<String> queues, Set<JobState> states) {
    Set<JobState> s = states == null ? Set.of() : states;
    for (JobState state : s) {
      if (state.isTerminal()) {
        throw new InvalidJobException(
            "state",
            "only queued, retrying and running jobs can be cancelled, not " + state.value());
      }
    }
    return withConnection(c -> adminStore.cancelMatching(c, nonNull(types), nonNull(queues), s));
  }

  /**
   * What {@link #cancelAll} would do with the same filter, changing nothing (a dry run): how many
   * waiting jobs it would cancel and how many running ones it would ask to stop.
   */
  public CancelCounts countCancellable(
      Set<String> types, Set<String> queues, Set<JobState> states) {
    Set<JobState> s = states == null ? Set.of() : states;
    for (JobState state : s) {
      if (state.isTerminal()) {
        throw new InvalidJobException(
            "state",
            "only queued, retrying and running jobs can be cancelled, not " + state.value());
      }
    }
    return withConnection(
        c -> adminStore.countCancelMatching(c, nonNull(types), nonNull(queues), s));
  }

  /** How many jobs {@link #retryAll} would queue again with the same filter, changing nothing (a dry run). */
  public long countRetryable(Set<String> types, Set<String> queues, Set<JobState> states) {
    Set<JobState> s = states == null ? Set.of() : states;
    for (JobState state : s) {
      if (state != JobState.FAILED && state != JobState.CANCELLED) {
        throw new InvalidJobException(
            "state", "only failed and cancelled jobs can be retried, not " + state.value());
      }
    }
    return withConnection(
        c -> adminStore.countRetryMatching(c, nonNull(types), nonNull(queues), s));
  }

  private static Set<String> nonNull(Set<String> values) {
    return values == null ? Set.of() : values;
  }

  /**
   * Puts a {@code failed} or {@code cancelled} job back in the queue. Its attempt count starts again
   * from 0, so it gets its full number of attempts; its error history is kept. It is due when it was due
   * if that is still ahead (a job cancelled while scheduled keeps its time), else at once; see
   * {@link #retry(UUID, boolean)} to run it now.
   */
  public RetryResult retry(UUID id) {
    return retry(id, false);
  }

  /**
   * As {@link #retry(UUID)}; with {@code now}, the job is due at once even if it was scheduled for later.
   */
  public RetryResult retry(UUID id, boolean now) {
    return withConnection(c -> adminStore.retry(c, id, now));
  }

  /**
   * Puts every {@code failed} or {@code cancelled} job of the given types and queues back in the queue
   * in one statement (an empty set matches any), as {@link #retry(UUID)} does for one.
   *
   * @param states some of {@code failed}, {@code cancelled}; empty for both
   * @return how many jobs were queued again
   * @throws InvalidJobException if {@code states} names another state
   */
  public long retryAll(Set<String> types, Set<String> queues, Set<JobState> states) {
    Set<JobState> s = states == null ? Set.of() : states;
    for (JobState state : s) {
      if (state != JobState.FAILED && state != JobState.CANCELLED) {
        throw new InvalidJobException(
            "state", "only failed and cancelled jobs can be retried, not " + state.value());
      }
    }
    return withConnection(c -> adminStore.retryMatching(c, nonNull(types), nonNull(queues), s));
  }

  /** {@link #retry(UUID)} in the caller's transaction. */
  public RetryResult retry(Connection connection, UUID id) {
    return call(() -> adminStore.retry(connection, id, false));
  }

  /**
   * Pauses a queue: workers stop claiming from it at their next claim (running jobs go on). Jobs can
   * still be enqueued to it.
   */
  public void pauseQueue(String queue) {
    JobType.requireName("queue", queue);
    call(() -> {
      adminStore.setQueuePaused(queue, true);
      return null;
    });
  }

  /** Resumes a paused queue and wakes its workers. */
  public void resumeQueue(String queue) {
    JobType.requireName("queue", queue);
    call(() -> {
      adminStore.setQueuePaused(queue, false);
      return null;
    });
  }

  // ---------------------------------------------------------------- flow control

  /**
   * Sets {@code queue}'s limits across the fleet ({@link QueueLimits}); the next claim of every worker
   * obeys them, however many workers serve the queue. Replaces limits a worker declared in code until
   * they are cleared ({@link #clearLimits}). Jobs running now count toward them; waiting jobs without a
   * partition get the one the new rule gives them.
   *
   * @throws InvalidJobException if the queue name is not 1 to 255 characters
   */
  public void setLimits(String queue, QueueLimits limits) {
    JobType.requireName("queue", queue);
    Objects.requireNonNull(limits, "limits");
    call(() -> limitsStore.set(queue, limits, io.pgjobs.store.LimitsStore.SOURCE_API));
    partitionRules.forget();
  }

  /** Removes {@code queue}'s limits: its workers claim it as fast as their lanes allow again. */
  public void clearLimits(String queue) {
    JobType.requireName("queue", queue);
    call(() -> limitsStore.set(queue, QueueLimits.NONE, io.pgjobs.store.LimitsStore.SOURCE_API));
    partitionRules.forget();
  }

  /** {@code queue}'s limits, if it has any. */
  public Optional<QueueLimits> limits(String queue) {
    JobType.requireName("queue", queue);
    return call(() -> limitsStore.get(queue));
  }

  /** Every limited queue's limits and what they hold back now (running, waiting, why, per partition). */
  public List<QueueLimitsStatus> limitsStatus() {
    return call(limitsStore::statuses);
  }

  /** {@code queue}'s limits and what they hold back now, if it is limited. */
  public Optional<QueueLimitsStatus> limitsStatus(String queue) {
    JobType.requireName("queue", queue);
    return call(() -> limitsStore.status(queue));
  }

  /**
   * Why job {@code id} waits, if it is waiting in a limited queue: queued or retrying and due, but not
   * started. Computed for the job's own partition, however many partitions the queue has (unlike
   * {@link QueueLimitsStatus#partitions()}, which holds the busiest only). A job whose {@link
   * JobWait#waitingFor()} is null is held back by no limit: it waits for a worker's free lane and its turn.
   *
   * @return empty if there is no such job, it is not waiting (scheduled for later, running, finished), or its
   *     queue has no limits
   */
  public Optional<JobWait> limitsWait(UUID id) {
    Objects.requireNonNull(id, "id");
    return call(() -> limitsStore.job(id))
        .filter(j -> j.limited() && j.due())
        .map(j ->
            new JobWait(id, j.queue(), j.limitKey() == null ? "" : j.limitKey(), j.waitingFor()));
  }

  /**
   * Job {@code id}'s partition in its limited queue: the key its queue's limits count it under while it
   * waits or runs ({@code ""}: none, as in a queue without a partition rule).
   *
   * @return empty if there is no such job, its queue has no limits, or it has no partition (a finished job
   *     of a queue without a partition rule, or a job started before its queue got limits)
   */
  public Optional<String> limitsPartition(UUID id) {
    Objects.requireNonNull(id, "id");
    return call(() -> limitsStore.job(id))
        .filter(j -> j.limited())
        .map(j -> j.limitKey() != null ? j.limitKey() : j.due() ? "" : null);
  }

  /** Every queue that has jobs or was paused: counts, oldest due job's age, paused flag. */
  public List<QueueInfo> queues() {
    return call(adminStore::queues);
  }

  /**
   * Due jobs waiting to be claimed, per queue (queued or retrying with {@code run_at} passed): the
   * queue depth a gauge reports. Queues with no due job are absent. Read from the ready indexes, not the
   * table: a call costs what the waiting jobs cost, not the size the hot table grew to in a peak (it
   * keeps its pages until it has emptied; see docs/operations.md).
   */
  public Map<String, Long> queueDepth() {
    return call(adminStore::readyDepth);
  }

  /**
   * Blocked jobs per queue: jobs of graphs waiting for the jobs they depend on ({@link JobGraph}), read
   * from their own partial index (queues with none are absent).
   */
  public Map<String, Long> blockedByQueue() {
    return call(adminStore::blockedDepth);
  }

  /** Jobs finished per minute during the last {@code window} (1 min to 7 d), by type, queue and state. */
  public List<MinuteStats> statsPerMinute(Duration window) {
    if (window == null
        || window.compareTo(Duration.ofMinutes(1)) < 0
        || window.compareTo(Duration.ofDays(7)) > 0) {
      throw new InvalidJobException("window", "must be between 1 minute and 7 days, was " + window);
    }
    return call(() -> adminStore.statsPerMinute(window));
  }

  /** The registered workers (live or not yet removed), with their heartbeats and running job counts. */
  public List<WorkerInfo> workers() {
    return call(workerStore::list);
  }

  /** The channel on which job events are announced (see {@link io.pgjobs.events.JobEventListener}). */
  public String eventsChannel() {
    return Channels.events(adminStore.schema());
  }

  /**
   * The data source this client was built on, as given. pgjobs itself borrows its connections in
   * auto-commit mode whatever the pool's default (see docs/guarantees.md, "Which pools work").
   */
  public DataSource dataSource() {
    return dataSource;
  }

  /**
   * The recurring (cron) schedules of this client's database, managed at run time: list with next fire
   * times and last run, add, update, remove, pause, resume, run now. See
   * {@link io.pgjobs.recurring.RecurringSchedules}.
   */
  public io.pgjobs.recurring.RecurringSchedules recurring() {
    return new io.pgjobs.recurring.RecurringSchedules(this);
  }

  // ---------------------------------------------------------------- internals

  /**
   * Inserts {@code job} under an enqueue span (see {@link JobTracing}), on {@code connection} or, if
   * null, on a connection of its own. The job carries the span's trace context, so its run joins the
   * trace; with tracing off the span is a constant and the job is inserted as built.
   */
  private EnqueuedJob traced(NewJob job, Connection connection) {
    JobTracing.Enqueue span = tracing.startEnqueue(job.queue(), job.type(), 1, false);
    EnqueuedJob result;
    try {
      String traceContext = span.traceContext();
      NewJob traced = traceContext == null ? job : job.withTraceContext(traceContext);
      result = connection == null
          ? withConnection(c -> committingItself(() -> insert(c, partitionRules.keyed(traced, c))))
          : call(() -> insert(connection, partitionRules.keyed(traced, connection)));
    } catch (RuntimeException | Error e) {
      span.end(null, e);
      throw e;
    }
    span.end(result.job().id(), null);
    return result;
  }

  /**
   * {@link #traced(NewJob, Connection)} for a bulk enqueue: one span for the batch. Unique jobs go in with
   * one INSERT statement (all or none), others by COPY in one transaction with their wake-up notification.
   *
   * @return each job's id (for unique jobs, the id of the job that stands for it) and how many are new
   */
  private EnqueueStore.UniqueBatch tracedAll(List<NewJob> jobs, Connection connection) {
    JobTracing.Enqueue span = tracing.startEnqueue(
        jobs.isEmpty() ? "" : jobs.get(0).queue(),
        jobs.isEmpty() ? "" : jobs.get(0).type(),
        jobs.size(),
        true);
    EnqueueStore.UniqueBatch batch;
    try {
      String traceContext = span.traceContext();
      List<NewJob> untraced = call(() -> partitionRules.keyed(jobs, connection));
      List<NewJob> traced = traceContext == null
          ? untraced
          : untraced instanceof StreamedJobs streamed
              ? streamed.map(j -> j.withTraceContext(traceContext))
              : untraced.stream().map(j -> j.withTraceContext(traceContext)).toList();
      if (!traced.isEmpty() && traced.getFirst().unique() != null) {
        batch = connection == null
            ? withConnection(c -> committingItself(() -> enqueueStore.insertAllUnique(c, traced)))
            : call(() -> enqueueStore.insertAllUnique(connection, traced));
      } else {
        // In a transaction of its own: the rows (and keys) with their wake-up notification. A
        // COMMIT whose answer was lost is reported by the store (EnqueueOutcomeUnknownException).
        batch = connection == null
            ? call(() -> enqueueStore.insertAll(traced))
            : call(() -> enqueueStore.insertAll(connection, traced));
      }
    } catch (RuntimeException | Error e) {
      span.end(null, e);
      throw e;
    }
    span.end(null, null);
    return batch;
  }

  private EnqueuedJob insert(Connection c, NewJob job) throws SQLException {
    EnqueuedJob result = enqueueStore.insert(c, job);
    if (result.created()) {
      metrics.enqueued(job.type(), 1);
    }
    return result;
  }

  private <P> NewJob newJob(JobType<P> type, P payload, EnqueueOptions options) {
    if (type == null) {
      throw new InvalidJobException("type", "is required");
    }
    if (payload != null) {
      type.validate(payload);
    }
    return partitioned(
        newJob(type.name(), type, codec.encodePayload(payload), options), type, payload);
  }

  /**
   * {@code job} in the partition its type computes from {@code payload} ({@link JobType#withPartition}),
   * unless the enqueue gave one.
   */
  private static <P> NewJob partitioned(NewJob job, JobType<P> type, P payload) {
    if (job.limitKey() != null || type == null || payload == null) {
      return job;
    }
    String key = type.partitionOf(payload);
    return key == null ? job : job.withLimitKey(key);
  }

  private NewJob newJobByName(String typeName, Object payload, EnqueueOptions options) {
    JobType.requireName("type", typeName);
    JobType<?> known = knownTypes.get(typeName);
    String json = codec.encodePayload(payload);
    if (known != null) {
      // Strict here (unknown members refused) though workers read leniently: a member the payload
      // class lacks is, at enqueue time, a caller's mistake that would otherwise be stored and
      // ignored.
      Object decoded = codec.decodeStrict(json, known.payloadClass(), typeName);
      known.validateUnchecked(decoded);
      NewJob job = newJob(typeName, known, json, options);
      String key =
          job.limitKey() != null || decoded == null ? null : known.partitionOfUnchecked(decoded);
      return key == null ? job : job.withLimitKey(key);
    }
    return newJob(typeName, known, json, options);
  }

  private <P> List<NewJob> newJobs(
      JobType<P> type, Collection<? extends P> payloads, EnqueueOptions options) {
    EnqueueOptions opts = batchOptions(type, payloads, options);
    List<NewJob> jobs = new ArrayList<>(payloads.size());
    for (P payload : payloads) {
      jobs.add(batchJob(type, payload, opts));
    }
    return jobs;
  }

  /**
   * The jobs of an {@code enqueueAll} in a transaction of its own, made as its COPY reads them
   * ({@link StreamedJobs}: the payloads are encoded and checked while the server stores the rows sent
   * before) when no job needs the others first; jobs with keys from their payload, or unique jobs,
   * are all made now (their statements run before the COPY). A payload refused then fails the
   * enqueue in the middle of the COPY, which is rolled back: nothing is stored, as before.
   */
  private <P> List<NewJob> streamedJobs(
      JobType<P> type, Collection<? extends P> payloads, EnqueueOptions options) {
    EnqueueOptions opts = batchOptions(type, payloads, options);
    if (type.idempotencyKeyFrom() != null || opts.unique() != null || type.unique() != null) {
      return newJobs(type, payloads, opts);
    }
    @SuppressWarnings("unchecked") // the array holds the collection's elements, each a P
    P[] items = (P[]) payloads.toArray();
    boolean dueNow =
        opts.runAt() == null && (opts.delay() == null || opts.delay().toMillis() == 0);
    return new StreamedJobs(items.length, i -> batchJob(type, items[i], opts), dueNow);
  }

  /** Checks what a batch's jobs share; returns the options in effect. */
  private static <P> EnqueueOptions batchOptions(
      JobType<P> type, Collection<? extends P> payloads, EnqueueOptions options) {
    if (type == null) {
      throw new InvalidJobException("type", "is required");
    }
    Objects.requireNonNull(payloads, "payloads");
    EnqueueOptions opts = options == null ? EnqueueOptions.DEFAULTS : options;
    if (opts.idempotencyKey() != null) {
      throw new InvalidJobException(
          "idempotencyKey",
          "is per job; enqueueAll cannot give one key to many jobs (use enqueue)");
    }
    return opts;
  }

  /** One job of a batch: its payload checked and encoded, its id drawn. */
  private <P> NewJob batchJob(JobType<P> type, P payload, EnqueueOptions opts) {
    if (payload != null) {
      type.validate(payload);
    }
    return partitioned(
        newJob(type.name(), type, codec.encodePayload(payload), opts), type, payload);
  }

  private static NewJob newJob(
      String name, JobType<?> type, String payloadJson, EnqueueOptions options) {
    EnqueueOptions o = options == null ? EnqueueOptions.DEFAULTS : options;
    Duration timeout = o.timeout();
    // An explicit key wins; else a type may take its key from a payload field. An explicit unique
    // rule
    // replaces the type's key rule, and an explicit key the type's unique rule (both explicit:
    // refused by
    // EnqueueOptions).
    String key = o.idempotencyKey() != null
            || o.unique() != null
            || type == null
            || type.idempotencyKeyFrom() == null
        ? o.idempotencyKey()
        : IdempotencyKeys.fromPayload(name, type.idempotencyKeyFrom(), payloadJson);
    UniqueOptions unique = o.unique() != null
        ? o.unique()
        : o.idempotencyKey() != null || type == null ? null : type.unique();
    String queue =
        o.queue() != null ? o.queue() : type != null ? type.queue() : JobType.DEFAULT_QUEUE;
    return new NewJob(
        UuidV7.generate(),
        name,
        queue,
        payloadJson,
        o.priority() != null
            ? o.priority()
            : type != null ? type.priority() : JobType.DEFAULT_PRIORITY,
        o.maxAttempts() != null
            ? o.maxAttempts()
            : type != null ? type.maxAttempts() : JobType.DEFAULT_MAX_ATTEMPTS,
        o.runAt(),
        o.delay() == null ? null : o.delay().toMillis(),
        o.context(),
        key,
        timeout == null ? null : timeout.toMillis(),
        key == null ? null : IdempotencyFingerprint.of(name, payloadJson, o),
        o.parentId(),
        unique == null ? null : UniqueKeys.base(name, queue, payloadJson, unique),
        unique,
        o.capability() != null ? o.capability() : type != null ? type.capability() : null,
        null,
        o.partition());
  }

  /**
   * Runs an enqueue on a connection of the client's own in auto-commit mode (each statement commits as it
   * ends): a connection lost under it may have lost the answer of a statement that committed, so that
   * failure is {@link EnqueueOutcomeUnknownException}; any other is thrown as it is.
   */
  private static <T> T committingItself(SqlSupplier<T> work) throws SQLException {
    try {
      return work.get();
    } catch (SQLException e) {
      if (io.pgjobs.store.BrokenConnections.connectionLost(e)) {
        throw EnqueueStore.outcomeUnknown(e);
      }
      throw e;
    }
  }

  private <T> T withConnection(SqlFunction<T> work) {
    try (Connection c = borrowed.getConnection()) {
      return work.apply(c);
    } catch (SQLException e) {
      throw new PgJobsException("database error: " + e.getMessage(), e);
    }
  }

  private static <T> T call(SqlSupplier<T> work) {
    try {
      return work.get();
    } catch (SQLException e) {
      throw new PgJobsException("database error: " + e.getMessage(), e);
    }
  }

  @FunctionalInterface
  private interface SqlFunction<T> {
    T apply(Connection connection) throws SQLException;
  }

  @FunctionalInterface
  private interface SqlSupplier<T> {
    T get() throws SQLException;
  }

  /** Builder of {@link JobClient}. */
  public static final class Builder {
    private final DataSource dataSource;
    private String schema = DEFAULT_SCHEMA;
    private JsonMapper mapper = PayloadCodec.DEFAULT_MAPPER;
    private JobMetrics metrics = JobMetrics.NONE;
    private final Map<String, JobType<?>> knownTypes = new ConcurrentHashMap<>();
    private final Map<String, io.pgjobs.workflow.WorkflowType<?>> knownWorkflows =
        new ConcurrentHashMap<>();
    private JobTracing tracing;

    private Builder(DataSource dataSource) {
      this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
    }

    /** The pgjobs schema ({@link io.pgjobs.config.PgJobsSettings#SCHEMA}): 1 to 51 lowercase letters, digits, _. */
    public Builder schema(String schema) {
      this.schema = schema;
      return this;
    }

    /** The Jackson mapper for payloads and outputs (default: ignores unknown properties). */
    public Builder jsonMapper(JsonMapper mapper) {
      this.mapper = Objects.requireNonNull(mapper, "mapper");
      return this;
    }

    /** Where to record enqueue counts (default: nowhere). */
    public Builder metrics(JobMetrics metrics) {
      this.metrics = Objects.requireNonNull(metrics, "metrics");
      return this;
    }

    /**
     * Traces enqueues with {@code openTelemetry}: each enqueue is a PRODUCER span, and its W3C trace
     * context is stored with the job so that the worker's run span joins the trace (docs/operations.md,
     * "Tracing"). Default: {@code GlobalOpenTelemetry} when the OpenTelemetry API is on the class path
     * (the Java agent's, or an SDK registered globally; nothing is traced until one is), else none.
     * Pass {@code OpenTelemetry.noop()} to turn tracing off.
     */
    public Builder openTelemetry(io.opentelemetry.api.OpenTelemetry openTelemetry) {
      this.tracing = JobTracing.of(openTelemetry);
      return this;
    }

    /**
     * Internal: the tracing a worker shares with the client it gives its handlers
     * ({@link io.pgjobs.JobContext#enqueue}); applications use {@link #openTelemetry}.
     */
    public Builder tracing(JobTracing tracing) {
      this.tracing = Objects.requireNonNull(tracing, "tracing");
      return this;
    }

    /**
     * Job types whose defaults and payload class apply where a type is named by a string: {@link
     * JobClient#enqueue(String, Object, EnqueueOptions)} (an unknown name gets pgjobs' defaults and no payload
     * check), {@link JobClient#recurring()}, and an {@code ApiServer} over this client (which refuses other
     * types unless told to accept unknown ones). Enqueueing with a {@link JobType} and running jobs need none.
     */
    public Builder knownTypes(JobType<?>... types) {
      for (JobType<?> type : types) {
        knownTypes.put(type.name(), type);
      }
      return this;
    }

    /** Same, from a collection. */
    public Builder knownTypes(Collection<? extends JobType<?>> types) {
      types.forEach(t -> knownTypes.put(t.name(), t));
      return this;
    }

    /**
     * The workflows this client knows (package {@code io.pgjobs.workflow}): their names, versions, input
     * classes and examples, as {@link JobClient#knownWorkflows()}. Each workflow's job type
     * ({@link io.pgjobs.workflow.WorkflowType#jobType()}) becomes a known type too ({@link #knownTypes}),
     * so that a run started by name gets its defaults and its input is checked; a type or workflow of the
     * same name given earlier is replaced. An {@code ApiServer} over this client lists them
     * ({@code GET /workflow-types}), lists their runs ({@code GET /workflows}) and starts only them
     * ({@code POST /workflows/{name}/start}) unless told to accept unknown types. Registering a workflow on a
     * worker ({@code JobWorker.Builder.workflow}) does not make it known here: declare it on both.
     */
    public Builder knownWorkflows(io.pgjobs.workflow.WorkflowType<?>... workflows) {
      return knownWorkflows(List.of(workflows));
    }

    /** Same, from a collection. */
    public Builder knownWorkflows(
        Collection<? extends io.pgjobs.workflow.WorkflowType<?>> workflows) {
      for (io.pgjobs.workflow.WorkflowType<?> workflow : workflows) {
        Objects.requireNonNull(workflow, "workflow");
        knownWorkflows.put(workflow.name(), workflow);
        knownTypes.put(workflow.name(), workflow.jobType());
      }
      return this;
    }

    /**
     * Validates and builds.
     *
     * @throws IllegalArgumentException if the schema name is invalid
     */
    public JobClient build() {
      return new JobClient(this);
    }
  }
}
