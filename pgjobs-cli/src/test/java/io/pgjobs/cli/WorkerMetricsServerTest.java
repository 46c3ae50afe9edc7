package io.pgjobs.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.pgjobs.cli.config.Settings;
import java.net.ConnectException;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.Collections;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The worker's metrics port (finding 13): this machine only unless {@code worker_metrics_bind} says otherwise. */
class WorkerMetricsServerTest {

  /** An IPv4 address of this machine that is not a loopback address, or null. */
  private static InetAddress networkAddress() throws Exception {
    for (NetworkInterface nic : Collections.list(NetworkInterface.getNetworkInterfaces())) {
      if (!nic.isUp() || nic.isLoopback()) {
        continue;
      }
      for (InetAddress address : Collections.list(nic.getInetAddresses())) {
        if (address instanceof Inet4Address && !address.isLoopbackAddress()) {
          return address;
        }
      }
    }
    return null;
  }

  @Test
  void byDefaultTheMetricsPortIsReachableFromThisMachineOnly() throws Exception {
    InetAddress network = networkAddress();
    assumeTrue(network != null, "this machine has no network address to try");
    Settings.Bind defaults = Settings.of(Map.of()).workerMetricsBind().orElseThrow();
    assertThat(defaults.port()).isEqualTo(9091);
    // The default's host on a free port: 9091 itself may be taken on a shared machine.
    try (WorkerMetricsServer server = WorkerMetricsServer.start(
            new Settings.Bind(defaults.host(), 0),
            new PrometheusMeterRegistry(PrometheusConfig.DEFAULT),
            null);
        HttpClient http = HttpClient.newHttpClient()) {
      int port = server.port();
      HttpResponse<String> live = http.send(
          HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/health/live"))
              .build(),
          HttpResponse.BodyHandlers.ofString());
      assertThat(live.statusCode()).isEqualTo(200);
      assertThatThrownBy(() -> new Socket(network, port).close())
          .as(
              "a connection to %s:%d, this machine's network address",
              network.getHostAddress(), port)
          .isInstanceOf(ConnectException.class);
    }
  }

  @Test
  void theSettingBindsElsewhereWhenAsked() throws Exception {
    InetAddress network = networkAddress();
    assumeTrue(network != null, "this machine has no network address to try");
    Settings settings = Settings.of(Map.of(Settings.WORKER_METRICS_BIND, "0.0.0.0:0"));
    try (WorkerMetricsServer server = WorkerMetricsServer.start(
        settings.workerMetricsBind().orElseThrow(),
        new PrometheusMeterRegistry(PrometheusConfig.DEFAULT),
        null)) {
      new Socket(network, server.port()).close();
    }
  }
}
