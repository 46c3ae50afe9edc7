package io.pgjobs.spring;

import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.pgjobs.JobClient;
import io.pgjobs.JobType;
import io.pgjobs.config.PgJobsSettings;
import io.pgjobs.metrics.JobMetrics;
import io.pgjobs.server.ApiServer;
import io.pgjobs.worker.JobWorker;
import jakarta.servlet.http.HttpServlet;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.autoconfigure.condition.NoneNestedConditions;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;
import org.springframework.boot.web.servlet.ServletRegistrationBean;
import org.springframework.context.SmartLifecycle;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Configuration;

/**
 * pgjobs' HTTP API, dashboard and API docs mounted under {@code pgjobs.web.path} (default {@code /jobs})
 * of the application's own servlet container, when {@code pgjobs.web.enabled=true}: the API of
 * {@code pgjobs-server} as a servlet mapped to {@code /jobs/*}, so it sits behind the application's
 * filters (Spring Security among them) like any other path. It needs {@code io.pgjobs:pgjobs-server} on
 * the class path and a servlet web application; without either, enabling it stops the startup with a
 * message saying so rather than serving nothing.
 *
 * <p>Authentication: the mount checks {@code pgjobs.web.tokens} (bearer tokens, as {@code pgjobs serve
 * --api-tokens}). Without tokens it refuses to start unless {@code pgjobs.web.allow-unauthenticated=true}
 * says something else protects the path, mirroring {@code ApiServer}'s refusal to listen on the network
 * without tokens: the API can cancel and retry every job.
 */
@AutoConfiguration(after = PgJobsAutoConfiguration.class)
@ConditionalOnBooleanProperty(name = "pgjobs.web.enabled")
public class PgJobsWebAutoConfiguration {
  private static final Pattern PATH = Pattern.compile("(/[A-Za-z0-9._~\\-]+)+");

  /** The mount, in a servlet web application with {@code pgjobs-server} on the class path. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(ApiServer.class)
  @ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
  @ConditionalOnBean(JobClient.class)
  static class MountConfiguration {
    @Bean(destroyMethod = "close")
    ApiServer pgJobsApiServer(
        JobClient client,
        PgJobsProperties properties,
        ObjectProvider<PgJobsHandler<?>> handlers,
        ObjectProvider<JobWorker.Registration<?>> registrations,
        ObjectProvider<JobMetrics> metrics,
        ObjectProvider<PgJobsClientCustomizer> customizers,
        ObjectProvider<PrometheusMeterRegistry> prometheus) {
      PgJobsProperties.Web web = properties.getWeb();
      checkPath(web.getPath());
      // The API's own client knows the handler beans' job types, so POST /jobs validates their
      // payloads and applies their defaults; the application's JobClient bean stays as the
      // application configured it.
      List<JobType<?>> types = new ArrayList<>();
      handlers.orderedStream().filter(h -> h.type() != null).forEach(h -> types.add(h.type()));
      registrations.orderedStream().forEach(r -> types.add(r.type()));
      JobClient.Builder apiClient = JobClient.builder(client.dataSource())
          .schema(client.schema())
          .metrics(metrics.getIfAvailable(() -> JobMetrics.NONE))
          .knownTypes(types);
      customizers.orderedStream().forEach(c -> c.customize(apiClient));

      ApiServer.Builder builder = ApiServer.builder(apiClient.build())
          .acceptUnknownTypes(web.isAcceptUnknownTypes())
          .tokens(tokens(web));
      PrometheusMeterRegistry registry = prometheus.getIfUnique();
      if (registry != null) {
        builder.meterRegistry(
            registry); // /jobs/metrics then shows the application's meters, pgjobs' among them
      }
      builder.requestTimeout(web.getRequestTimeout());
      builder.allowedOrigins(web.getAllowedOrigins()).allowedHosts(web.getAllowedHosts());
      try {
        return builder.build();
      } catch (IllegalArgumentException e) {
        // build() checks the tokens and the request timeout; a token's message must not show the
        // tokens
        if (e.getMessage().contains("token")) {
          throw new PgJobsWebTokensException(e.getMessage(), e);
        }
        String property = e.getMessage().contains("allowed origin")
            ? "pgjobs.web.allowed-origins"
            : e.getMessage().contains("allowed host")
                ? "pgjobs.web.allowed-hosts"
                : PgJobsSettings.REQUEST_TIMEOUT.springProperty();
        Object value = property.endsWith("origins")
            ? web.getAllowedOrigins()
            : property.endsWith("hosts") ? web.getAllowedHosts() : web.getRequestTimeout();
        InvalidConfigurationPropertyValueException invalid =
            new InvalidConfigurationPropertyValueException(property, value, e.getMessage());
        invalid.initCause(e);
        throw invalid;
      }
    }

    @Bean
    ServletRegistrationBean<HttpServlet> pgJobsWebServlet(
        ApiServer server, PgJobsProperties properties) {
      ServletRegistrationBean<HttpServlet> registration = new ServletRegistrationBean<>(
          server.startServlet(), properties.getWeb().getPath() + "/*");
      registration.setName("pgjobs");
      registration.setAsyncSupported(true); // the event stream (/events) is an async response
      registration.setLoadOnStartup(1);
      return registration;
    }

    /**
     * Ends the event streams when the context stops, before the web server's graceful shutdown (a lower
     * phase), which would otherwise wait its whole timeout for streams that never end by themselves.
     */
    @Bean
    SmartLifecycle pgJobsWebEventStreams(ApiServer server) {
      return new SmartLifecycle() {
        private volatile boolean running;

        @Override
        public void start() {
          running = true;
        }

        @Override
        public void stop() {
          running = false;
          server.endEventStreams();
        }

        @Override
        public boolean isRunning() {
          return running;
        }
      };
    }

    /** {@code read:<token>} reads only; {@code admin:<token>} or a bare token may do everything. */
    private static Map<String, ApiServer.Scope> tokens(PgJobsProperties.Web web) {
      Map<String, ApiServer.Scope> tokens = new LinkedHashMap<>();
      for (String token : web.getTokens()) {
        if (token.startsWith("read:")) {
          tokens.put(token.substring(5), ApiServer.Scope.READ);
        } else if (token.startsWith("admin:")) {
          tokens.put(token.substring(6), ApiServer.Scope.ADMIN);
        } else {
          tokens.put(token, ApiServer.Scope.ADMIN);
        }
      }
      if (tokens.isEmpty() && !web.isAllowUnauthenticated()) {
        throw new InvalidConfigurationPropertyValueException(
            "pgjobs.web.tokens",
            "(none)",
            "refusing to mount the pgjobs API at " + web.getPath()
                + " without authentication: anyone who can"
                + " reach this application could enqueue, cancel and retry every job. Give"
                + " pgjobs.web.tokens (read:<token> to read, admin:<token> for everything; 16 characters or"
                + " more), or set pgjobs.web.allow-unauthenticated=true if something else protects "
                + web.getPath() + "/** (Spring Security, a proxy)");
      }
      return tokens;
    }
  }

  /** {@code pgjobs.web.enabled=true} without {@code pgjobs-server}: say what is missing. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnMissingClass("io.pgjobs.server.ApiServer")
  static class MissingServerConfiguration {
    @Bean
    Object pgJobsWebUnavailable() {
      throw new InvalidConfigurationPropertyValueException(
          "pgjobs.web.enabled",
          true,
          "mounting the pgjobs API and dashboard needs io.pgjobs:pgjobs-server on the class path: add it as a"
              + " dependency, or remove pgjobs.web.enabled");
    }
  }

  /** {@code pgjobs.web.enabled=true} in an application without a servlet container. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "io.pgjobs.server.ApiServer")
  @Conditional(NotServletApplication.class)
  static class NotServletConfiguration {
    @Bean
    Object pgJobsWebUnavailable() {
      throw new InvalidConfigurationPropertyValueException(
          "pgjobs.web.enabled",
          true,
          "the pgjobs API and dashboard are mounted as a servlet, and this application is not a servlet web"
              + " application: add spring-boot-starter-webmvc (or another servlet container), or remove"
              + " pgjobs.web.enabled");
    }
  }

  static final class NotServletApplication extends NoneNestedConditions {
    NotServletApplication() {
      super(ConfigurationPhase.REGISTER_BEAN);
    }

    @ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
    static class Servlet {}
  }

  /**
   * Checks {@code pgjobs.web.path}: a fixed path like {@code /jobs} or {@code /admin/jobs}, which the
   * servlet is mapped below ({@code /jobs/*}).
   */
  static void checkPath(String path) {
    String reason = null;
    if (path == null || path.isBlank()) {
      reason = "must be a path like /jobs";
    } else if (!path.startsWith("/")) {
      reason = "must start with / (like /jobs)";
    } else if (path.contains("*")) {
      reason =
          "must be a plain path without wildcards (write /jobs: the mount covers everything below it)";
    } else if (path.equals("/")) {
      reason =
          "must not be / (the mount would take every path of the application); use a path like /jobs";
    } else if (path.endsWith("/")) {
      reason = "must not end with / (write /jobs; the dashboard is then at /jobs/)";
    } else if (!PATH.matcher(path).matches()) {
      reason =
          "must be one or more segments of letters, digits and . _ ~ -, like /jobs or /admin/jobs";
    }
    if (reason != null) {
      throw new InvalidConfigurationPropertyValueException("pgjobs.web.path", path, reason);
    }
  }
}
