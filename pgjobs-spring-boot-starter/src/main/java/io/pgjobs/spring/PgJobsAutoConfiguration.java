package io.pgjobs.spring;

import io.micrometer.core.instrument.MeterRegistry;
import io.pgjobs.JobClient;
import io.pgjobs.config.DurationText;
import io.pgjobs.config.PgJobsSettings;
import io.pgjobs.config.Setting;
import io.pgjobs.metrics.JobMetrics;
import io.pgjobs.metrics.MicrometerJobMetrics;
import io.pgjobs.worker.JobWorker;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;
import org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Auto-configuration of pgjobs over the application's {@link DataSource}: a {@link JobClient} (the
 * schema migrated at startup unless {@code pgjobs.migrate-on-start=false}), a
 * {@link TransactionalJobClient} that enqueues in Spring's transaction, and, unless
 * {@code pgjobs.worker.enabled=false}, a {@link JobWorker} running every {@link PgJobsHandler} bean,
 * started and stopped with the context by {@link PgJobsWorkerLifecycle}. With Micrometer, metrics go to
 * the application's {@code MeterRegistry}; with actuator, {@link PgJobsHealthIndicator} is the
 * {@code pgjobs} health contributor. {@link PgJobsWebAutoConfiguration} mounts the HTTP API and dashboard
 * under a path when {@code pgjobs.web.enabled=true}.
 *
 * <p>An invalid {@code pgjobs.*} value stops the startup with Spring Boot's failure analysis for
 * {@link InvalidConfigurationPropertyValueException}: the property, its value, where it was set, and the
 * reason (the pgjobs builder's message: what was wrong and what is allowed).
 */
@AutoConfiguration(
    afterName = {
      "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration",
      "org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration",
      "org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration",
      "org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration"
    })
@ConditionalOnClass(JobClient.class)
@ConditionalOnSingleCandidate(DataSource.class)
@EnableConfigurationProperties(PgJobsProperties.class)
public class PgJobsAutoConfiguration {
  private static final Logger log = LoggerFactory.getLogger(PgJobsAutoConfiguration.class);

  @Bean
  @ConditionalOnMissingBean
  JobClient pgJobsClient(
      DataSource dataSource,
      PgJobsProperties properties,
      ObjectProvider<JobMetrics> metrics,
      ObjectProvider<PgJobsClientCustomizer> customizers) {
    JobClient.Builder builder = JobClient.builder(dataSource)
        .schema(properties.getSchema())
        .metrics(metrics.getIfAvailable(() -> JobMetrics.NONE));
    customizers.orderedStream().forEach(c -> c.customize(builder));
    JobClient client;
    try {
      client = builder.build();
    } catch (IllegalArgumentException e) {
      throw invalid("pgjobs.schema", properties.getSchema(), e);
    }
    if (properties.isMigrateOnStart()) {
      client.migrate();
      log.debug("pgjobs schema '{}' migrated", client.schema());
    }
    return client;
  }

  @Bean
  @ConditionalOnMissingBean
  TransactionalJobClient pgJobsTransactionalClient(JobClient client) {
    return new TransactionalJobClient(client, client.dataSource());
  }

  /** The worker, unless {@code pgjobs.worker.enabled=false}. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnBooleanProperty(name = "pgjobs.worker.enabled", matchIfMissing = true)
  static class WorkerConfiguration {
    @Bean(destroyMethod = "close") // close is idempotent: the lifecycle closes it first, gracefully
    @ConditionalOnMissingBean
    JobWorker pgJobsWorker(
        JobClient client, // the schema is migrated before the worker is built
        PgJobsProperties properties,
        ObjectProvider<PgJobsHandler<?>> handlers,
        ObjectProvider<JobWorker.Registration<?>> registrations,
        ObjectProvider<JobMetrics> metrics,
        ObjectProvider<PgJobsWorkerCustomizer> customizers) {
      PgJobsProperties.Worker w = properties.getWorker();
      // One composition root around the client bean: the worker's handlers enqueue through it, and
      // it shares its codec and stores.
      JobWorker.Builder builder = io.pgjobs.worker.PgJobs.over(client)
          .workerBuilder()
          .metrics(metrics.getIfAvailable(() -> JobMetrics.NONE))
          .listen(w.isListen())
          .handOff(w.isHandOff())
          .maintenance(w.isMaintenance());
      set(
          PgJobsSettings.POLL_INTERVAL.springProperty(),
          w.getPollInterval(),
          builder::pollInterval);
      set(
          PgJobsSettings.SHUTDOWN_GRACE.springProperty(),
          w.getShutdownGrace(),
          builder::shutdownGrace);
      set(
          PgJobsSettings.STALE_THRESHOLD.springProperty(),
          w.getStaleThreshold(),
          builder::staleThreshold);
      set(
          PgJobsSettings.WORKER_DEAD_AFTER.springProperty(),
          w.getDeadAfter(),
          builder::workerDeadAfter);
      set(PgJobsSettings.RETENTION.springProperty(), w.getRetention(), builder::retention);
      set(PgJobsSettings.CLAIM_BATCH.springProperty(), w.getClaimBatch(), builder::claimBatch);
      if (w.getId() != null) {
        set("pgjobs.worker.id", w.getId(), builder::workerId);
      }

      List<JobWorker.Registration<?>> all = new java.util.ArrayList<>();
      handlers.orderedStream().forEach(h -> all.add(registration(h)));
      registrations.orderedStream().forEach(all::add);
      if (all.isEmpty()) {
        throw new InvalidConfigurationPropertyValueException(
            "pgjobs.worker.enabled",
            true,
            "the worker has no job handler: define beans implementing io.pgjobs.spring.PgJobsHandler (or"
                + " @Beans of JobWorker.Registration), or set pgjobs.worker.enabled=false on nodes that only"
                + " enqueue");
      }
      Map<String, JobWorker.Registration<?>> byName = new LinkedHashMap<>();
      for (JobWorker.Registration<?> r : all) {
        JobWorker.Registration<?> earlier = byName.putIfAbsent(r.type().name(), r);
        if (earlier != null) {
          throw new IllegalStateException("two handler beans for job type '"
              + r.type().name() + "': " + earlier.handler().getClass().getName() + " and "
              + r.handler().getClass().getName() + "; a job type has one handler");
        }
      }
      builder.registerAll(all);

      Map<String, Integer> queues = new LinkedHashMap<>(w.getQueues());
      if (queues.isEmpty()) {
        all.forEach(r -> queues.putIfAbsent(r.type().queue(), w.getConcurrency()));
        Setting<Integer> concurrency = PgJobsSettings.CONCURRENCY;
        if (w.getConcurrency() < concurrency.min() || w.getConcurrency() > concurrency.max()) {
          throw new InvalidConfigurationPropertyValueException(
              concurrency.springProperty(),
              w.getConcurrency(),
              "must be between " + concurrency.min() + " and " + concurrency.max());
        }
      }
      queues.forEach((queue, concurrency) -> {
        try {
          builder.queue(queue, concurrency == null ? 0 : concurrency);
        } catch (IllegalArgumentException e) {
          throw invalid("pgjobs.worker.queues", queue + "=" + concurrency, e);
        }
      });
      customizers.orderedStream().forEach(c -> c.customize(builder));
      try {
        return builder.build();
      } catch (IllegalArgumentException e) {
        // the settings that only conflict together: heartbeat interval vs stale threshold and
        // dead-after
        throw invalid(
            "pgjobs.worker",
            "stale-threshold=" + DurationText.format(w.getStaleThreshold()) + ", dead-after="
                + DurationText.format(w.getDeadAfter()),
            e);
      }
    }

    @Bean
    @ConditionalOnMissingBean
    PgJobsWorkerLifecycle pgJobsWorkerLifecycle(JobWorker worker) {
      return new PgJobsWorkerLifecycle(worker);
    }

    private static <P> JobWorker.Registration<P> registration(PgJobsHandler<P> handler) {
      if (handler.type() == null) {
        throw new IllegalStateException(
            "handler bean " + handler.getClass().getName() + " returns no job type from type()");
      }
      return new JobWorker.Registration<>(handler.type(), handler);
    }
  }

  /**
   * Tracing with the application's {@code OpenTelemetry} bean (Spring Boot's OpenTelemetry support, or
   * the OpenTelemetry Spring starter), when the API is on the class path. Without such a bean the client
   * and the worker use {@code GlobalOpenTelemetry} (the Java agent's). Order 0: a customizer of the
   * application's, later in the order, can still change it.
   */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "io.opentelemetry.api.OpenTelemetry")
  static class TracingConfiguration {
    @Bean
    @org.springframework.core.annotation.Order(0)
    PgJobsClientCustomizer pgJobsClientTracing(
        ObjectProvider<io.opentelemetry.api.OpenTelemetry> openTelemetry) {
      return builder -> openTelemetry.ifUnique(builder::openTelemetry);
    }

    @Bean
    @org.springframework.core.annotation.Order(0)
    PgJobsWorkerCustomizer pgJobsWorkerTracing(
        ObjectProvider<io.opentelemetry.api.OpenTelemetry> openTelemetry) {
      return builder -> openTelemetry.ifUnique(builder::openTelemetry);
    }
  }

  /** Metrics into the application's {@code MeterRegistry}, when Micrometer is on the class path. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(MeterRegistry.class)
  static class MetricsConfiguration {
    @Bean
    @ConditionalOnMissingBean
    JobMetrics pgJobsMetrics(ObjectProvider<MeterRegistry> registry) {
      MeterRegistry r = registry.getIfUnique();
      return r == null ? JobMetrics.NONE : new MicrometerJobMetrics(r);
    }
  }

  /** The {@code pgjobs} health contributor, when actuator's health support is on the class path. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(HealthIndicator.class)
  @ConditionalOnEnabledHealthIndicator("pgjobs")
  static class HealthConfiguration {
    @Bean
    @ConditionalOnMissingBean(name = "pgjobsHealthIndicator")
    PgJobsHealthIndicator pgjobsHealthIndicator(
        JobClient client, ObjectProvider<PgJobsWorkerLifecycle> worker) {
      return new PgJobsHealthIndicator(
          client.dataSource(), client.schema(), worker.getIfAvailable());
    }
  }

  private static <T> void set(String property, T value, Consumer<T> setter) {
    try {
      setter.accept(value);
    } catch (IllegalArgumentException e) {
      throw invalid(property, value, e);
    }
  }

  private static InvalidConfigurationPropertyValueException invalid(
      String property, Object value, IllegalArgumentException cause) {
    Object shown = value instanceof Duration d ? DurationText.format(d) : value;
    InvalidConfigurationPropertyValueException e =
        new InvalidConfigurationPropertyValueException(property, shown, cause.getMessage());
    e.initCause(cause);
    return e;
  }
}
