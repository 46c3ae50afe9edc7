package io.pgjobs.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.context.Scope;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import io.pgjobs.JobClient;
import io.pgjobs.spring.TestJobs.Greet;
import io.pgjobs.spring.TestJobs.GreetHandler;
import io.pgjobs.testkit.TestDatabase;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/** The starter hands the application's {@code OpenTelemetry} bean to the client and the worker. */
@SpringBootTest(
    classes = PgJobsTracingTest.App.class,
    properties = "pgjobs.worker.poll-interval=100ms")
@DirtiesContext
class PgJobsTracingTest {
  static final TestDatabase db = TestDatabase.create();
  static final InMemorySpanExporter exporter = InMemorySpanExporter.create();

  @DynamicPropertySource
  static void database(DynamicPropertyRegistry registry) {
    registry.add("spring.datasource.url", db::jdbcUrl);
  }

  @AfterAll
  static void stopWorkerThenDropDatabase(ConfigurableApplicationContext context) {
    context.getBean(PgJobsWorkerLifecycle.class).stop();
    db.close();
  }

  @Configuration(proxyBeanMethods = false)
  @EnableAutoConfiguration
  static class App {
    @Bean
    GreetHandler greetHandler() {
      return new GreetHandler();
    }

    /** Not registered globally: only the starter can hand it to pgjobs. */
    @Bean(destroyMethod = "close")
    OpenTelemetrySdk openTelemetry() {
      return OpenTelemetrySdk.builder()
          .setTracerProvider(SdkTracerProvider.builder()
              .addSpanProcessor(SimpleSpanProcessor.create(exporter))
              .build())
          .build();
    }
  }

  @Autowired
  JobClient client;

  @Autowired
  OpenTelemetry openTelemetry;

  @Test
  void enqueueAndRunAreTracedWithTheApplicationsOpenTelemetryBean() {
    Span request = openTelemetry.getTracer("test").spanBuilder("request").startSpan();
    try (Scope ignored = request.makeCurrent()) {
      client.enqueue(TestJobs.GREET, new Greet("otel"));
    } finally {
      request.end();
    }
    await().atMost(Duration.ofSeconds(20)).until(() -> spans(SpanKind.CONSUMER).size() == 1);
    SpanData send = spans(SpanKind.PRODUCER).get(0);
    SpanData run = spans(SpanKind.CONSUMER).get(0);
    assertThat(send.getName()).isEqualTo("send greetings");
    assertThat(send.getTraceId()).isEqualTo(request.getSpanContext().getTraceId());
    assertThat(run.getName()).isEqualTo("process greetings");
    assertThat(run.getParentSpanId()).isEqualTo(send.getSpanId());
  }

  private static List<SpanData> spans(SpanKind kind) {
    return exporter.getFinishedSpanItems().stream()
        .filter(s -> s.getKind() == kind)
        .toList();
  }
}
