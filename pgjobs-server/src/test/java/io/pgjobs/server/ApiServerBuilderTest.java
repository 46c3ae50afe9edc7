package io.pgjobs.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.pgjobs.JobClient;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

class ApiServerBuilderTest {
  static final JobClient CLIENT = JobClient.builder(new PGSimpleDataSource()).build();

  @Test
  void buildRejectsEveryInvalidSettingNamingItAndWhatIsAllowed() {
    assertThatThrownBy(() -> ApiServer.builder(CLIENT).port(70_000).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("port")
        .hasMessageContaining("65535");
    assertThatThrownBy(() -> ApiServer.builder(CLIENT).host(" ").build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("host");
    assertThatThrownBy(
            () -> ApiServer.builder(CLIENT).requestTimeout(Duration.ZERO).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("requestTimeout");
    assertThatThrownBy(() -> ApiServer.builder(CLIENT).maxBodyBytes(0).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("maxBodyBytes");
    assertThatThrownBy(() -> ApiServer.builder(CLIENT)
            .tokens(Map.of("short", ApiServer.Scope.ADMIN))
            .build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("at least 16 characters");
    assertThatThrownBy(() -> ApiServer.builder(CLIENT)
            .corsOrigins(List.of("ops.example.com/path"))
            .build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("CORS origin");
    assertThatThrownBy(() -> ApiServer.builder(CLIENT).tokens(null).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("tokens");
  }

  @Test
  void aPortInUseFailsWithAPlainMessageAndNoErrorLoggedBeforeIt() throws Exception {
    ch.qos.logback.classic.Logger root = (ch.qos.logback.classic.Logger)
        org.slf4j.LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
    ch.qos.logback.core.read.ListAppender<ch.qos.logback.classic.spi.ILoggingEvent> events =
        new ch.qos.logback.core.read.ListAppender<>();
    events.start();
    root.addAppender(events);
    try (java.net.ServerSocket taken =
        new java.net.ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress())) {
      assertThatThrownBy(
              () -> ApiServer.builder(CLIENT).port(taken.getLocalPort()).build().start())
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("port " + taken.getLocalPort() + " is already in use");
    } finally {
      root.detachAppender(events);
    }
    assertThat(events.list).noneMatch(e -> e.getLevel() == ch.qos.logback.classic.Level.ERROR);
  }

  @Test
  void listensOnLoopbackByDefault() {
    assertThat(ApiServer.DEFAULT_HOST).isEqualTo("127.0.0.1");
    try (ApiServer server = ApiServer.builder(CLIENT).port(0).build().start()) {
      assertThat(server.localUri().toString()).startsWith("http://127.0.0.1:");
    }
  }

  @Test
  void refusesANonLoopbackAddressWithoutTokensUnlessAllowed() {
    assertThatThrownBy(() -> ApiServer.builder(CLIENT).host("0.0.0.0").build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("refusing to listen on 0.0.0.0 without authentication")
        .hasMessageContaining("allowUnauthenticated()");
    ApiServer.builder(CLIENT).host("0.0.0.0").allowUnauthenticated().build().close();
    ApiServer.builder(CLIENT)
        .host("0.0.0.0")
        .tokens(Map.of("0123456789abcdef", ApiServer.Scope.ADMIN))
        .build()
        .close();
    ApiServer.builder(CLIENT).host("localhost").build().close();
    ApiServer.builder(CLIENT).host("::1").build().close();
  }

  @Test
  void defaultsAreValidAndPortIsOnlyKnownOnceStarted() {
    ApiServer server = ApiServer.builder(CLIENT).build();
    assertThatThrownBy(server::port).isInstanceOf(IllegalStateException.class);
    assertThat(ApiServer.DEFAULT_PORT).isEqualTo(8080);
    assertThat(ApiServer.DEFAULT_MAX_BODY_BYTES).isEqualTo(1_048_576);
    server.close();
  }
}
