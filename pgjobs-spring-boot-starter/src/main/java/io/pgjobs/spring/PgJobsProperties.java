package io.pgjobs.spring;

import io.pgjobs.config.PgJobsSettings;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * The {@code pgjobs.*} properties. Durations are written the Spring way ({@code 500ms}, {@code 5s},
 * {@code 10m}, {@code 1h}); each is checked at startup against the range the pgjobs builders allow, and an
 * invalid value stops the application with a message naming the property, its value and what is allowed.
 * The properties the builders and the CLI share take their defaults from {@link PgJobsSettings}, where each
 * is declared once (its {@link io.pgjobs.config.Setting#springProperty()} names the property here:
 * {@code pgjobs.worker.dead-after} is the catalogue's {@code worker_dead_after}). Their defaults reach the
 * configuration metadata through {@code additional-spring-configuration-metadata.json}, which
 * {@code PgJobsPropertiesDocsTest} generates from the catalogue and keeps equal to it.
 */
@ConfigurationProperties(prefix = "pgjobs")
public class PgJobsProperties {
  /** Schema holding pgjobs' tables: 1 to 51 lowercase letters, digits and _, not starting with a digit. */
  private String schema = PgJobsSettings.SCHEMA.defaultValue();

  /** Create the schema or apply pending pgjobs migrations when the application starts. */
  private boolean migrateOnStart = true;

  private final Worker worker = new Worker();

  private final Web web = new Web();

  public String getSchema() {
    return schema;
  }

  public void setSchema(String schema) {
    this.schema = schema;
  }

  public boolean isMigrateOnStart() {
    return migrateOnStart;
  }

  public void setMigrateOnStart(boolean migrateOnStart) {
    this.migrateOnStart = migrateOnStart;
  }

  public Worker getWorker() {
    return worker;
  }

  public Web getWeb() {
    return web;
  }

  /**
   * The {@code pgjobs.web.*} properties: pgjobs' HTTP API, dashboard and API docs mounted under a path of
   * this application (needs {@code io.pgjobs:pgjobs-server} and a servlet web application).
   */
  public static class Web {
    /** Mount the pgjobs API and dashboard under pgjobs.web.path of this application. */
    private boolean enabled = false;

    /**
     * Where the API is mounted: a fixed path starting with / and without a trailing / or wildcard, like
     * /jobs or /admin/jobs. The dashboard is at {path}/, the API at {path}/jobs, {path}/queues, ...
     */
    private String path = "/jobs";

    /**
     * Bearer tokens the mount accepts (at least 16 characters): read:TOKEN may only read (GET),
     * admin:TOKEN or a bare TOKEN may do everything. Empty: no token check, which needs
     * pgjobs.web.allow-unauthenticated=true.
     */
    private List<String> tokens = new ArrayList<>();

    /**
     * Mount the API without tokens. Only when something else protects the path (Spring Security, a proxy):
     * the API can enqueue, cancel and retry every job.
     */
    private boolean allowUnauthenticated = false;

    /** Accept POST {path}/jobs for job types this application has no handler bean for. */
    private boolean acceptUnknownTypes = false;

    /** Longest an API request may take before it is answered 504 (10ms to 1h); event streams are exempt. */
    private Duration requestTimeout = PgJobsSettings.REQUEST_TIMEOUT.defaultValue();

    /**
     * Origins (scheme://host[:port], or *) whose pages may change jobs, queues and schedules through the
     * mount besides this application's own; a POST from any other page is refused with 403.
     */
    private List<String> allowedOrigins = new ArrayList<>();

    /**
     * Host names the mount answers to without tokens besides localhost, *.localhost and IP addresses
     * (jobs.example.com, *.example.com, or * for any); any other Host gets 421 (DNS rebinding).
     */
    private List<String> allowedHosts = new ArrayList<>();

    public boolean isEnabled() {
      return enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    public String getPath() {
      return path;
    }

    public void setPath(String path) {
      this.path = path;
    }

    public List<String> getTokens() {
      return tokens;
    }

    public void setTokens(List<String> tokens) {
      this.tokens = tokens;
    }

    public boolean isAllowUnauthenticated() {
      return allowUnauthenticated;
    }

    public void setAllowUnauthenticated(boolean allowUnauthenticated) {
      this.allowUnauthenticated = allowUnauthenticated;
    }

    public boolean isAcceptUnknownTypes() {
      return acceptUnknownTypes;
    }

    public void setAcceptUnknownTypes(boolean acceptUnknownTypes) {
      this.acceptUnknownTypes = acceptUnknownTypes;
    }

    public Duration getRequestTimeout() {
      return requestTimeout;
    }

    public void setRequestTimeout(Duration requestTimeout) {
      this.requestTimeout = requestTimeout;
    }

    public List<String> getAllowedOrigins() {
      return allowedOrigins;
    }

    public void setAllowedOrigins(List<String> allowedOrigins) {
      this.allowedOrigins = allowedOrigins;
    }

    public List<String> getAllowedHosts() {
      return allowedHosts;
    }

    public void setAllowedHosts(List<String> allowedHosts) {
      this.allowedHosts = allowedHosts;
    }
  }

  /** The {@code pgjobs.worker.*} properties: the worker that runs the handler beans' jobs. */
  public static class Worker {
    /**
     * Run a worker in this application. Turn it off on web-only nodes that enqueue but do not run jobs.
     */
    private boolean enabled = true;

    /**
     * Queues to serve and the most jobs run at once in each (1 to 10000), e.g.
     * {@code pgjobs.worker.queues.emails=20}. A queue name with dots is written in brackets:
     * {@code pgjobs.worker.queues[billing.eu]=5}. Empty: the default queue of every handler's job type,
     * each with {@code pgjobs.worker.concurrency}.
     */
    private Map<String, Integer> queues = new LinkedHashMap<>();

    /** Jobs run at once per queue when the queues come from the handlers' job types (1 to 10000). */
    private int concurrency = PgJobsSettings.CONCURRENCY.defaultValue();

    /** How often an idle queue is polled (10ms to 1h); NOTIFY wakes the worker sooner. */
    private Duration pollInterval = PgJobsSettings.POLL_INTERVAL.defaultValue();

    /**
     * Time running jobs get to finish when the application stops (0 to 1h); the jobs still running
     * then are interrupted and go back to their queue.
     */
    private Duration shutdownGrace = PgJobsSettings.SHUTDOWN_GRACE.defaultValue();

    /** A running job whose heartbeat is this old is rescued (1s to 24h). Use the same value on every node. */
    private Duration staleThreshold = PgJobsSettings.STALE_THRESHOLD.defaultValue();

    /**
     * A worker whose heartbeat row is this old is presumed dead and its jobs go back to the queue (1s to
     * 1h). Use the same value on every node.
     */
    private Duration deadAfter = PgJobsSettings.WORKER_DEAD_AFTER.defaultValue();

    /** Most jobs claimed per statement (1 to 10000). */
    private int claimBatch = PgJobsSettings.CLAIM_BATCH.defaultValue();

    /** LISTEN for new jobs; without it the worker relies on polling alone. */
    private boolean listen = PgJobsSettings.LISTEN.defaultValue();

    /**
     * Start a graph's child on the worker that ended its last parent, in the statement that records the
     * parent's success; without it every child is queued for the next claim.
     */
    private boolean handOff = PgJobsSettings.HAND_OFF.defaultValue();

    /** Take part in maintenance: rescue of stale jobs, pruning of finished jobs, removal of dead workers. */
    private boolean maintenance = PgJobsSettings.MAINTENANCE.defaultValue();

    /** How long finished jobs are kept, when this worker does maintenance (1s to 3650d). */
    private Duration retention = PgJobsSettings.RETENTION.defaultValue();

    /** This worker's id, at most 255 characters (default host:pid:random). */
    private String id;

    public boolean isEnabled() {
      return enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    public Map<String, Integer> getQueues() {
      return queues;
    }

    public void setQueues(Map<String, Integer> queues) {
      this.queues = queues;
    }

    public int getConcurrency() {
      return concurrency;
    }

    public void setConcurrency(int concurrency) {
      this.concurrency = concurrency;
    }

    public Duration getPollInterval() {
      return pollInterval;
    }

    public void setPollInterval(Duration pollInterval) {
      this.pollInterval = pollInterval;
    }

    public Duration getShutdownGrace() {
      return shutdownGrace;
    }

    public void setShutdownGrace(Duration shutdownGrace) {
      this.shutdownGrace = shutdownGrace;
    }

    public Duration getStaleThreshold() {
      return staleThreshold;
    }

    public void setStaleThreshold(Duration staleThreshold) {
      this.staleThreshold = staleThreshold;
    }

    public Duration getDeadAfter() {
      return deadAfter;
    }

    public void setDeadAfter(Duration deadAfter) {
      this.deadAfter = deadAfter;
    }

    public int getClaimBatch() {
      return claimBatch;
    }

    public void setClaimBatch(int claimBatch) {
      this.claimBatch = claimBatch;
    }

    public boolean isListen() {
      return listen;
    }

    public void setListen(boolean listen) {
      this.listen = listen;
    }

    public boolean isHandOff() {
      return handOff;
    }

    public void setHandOff(boolean handOff) {
      this.handOff = handOff;
    }

    public boolean isMaintenance() {
      return maintenance;
    }

    public void setMaintenance(boolean maintenance) {
      this.maintenance = maintenance;
    }

    public Duration getRetention() {
      return retention;
    }

    public void setRetention(Duration retention) {
      this.retention = retention;
    }

    public String getId() {
      return id;
    }

    public void setId(String id) {
      this.id = id;
    }
  }
}
