package io.pgjobs.cli;

import com.icegreen.greenmail.util.GreenMail;
import com.icegreen.greenmail.util.ServerSetup;
import io.pgjobs.Dependency;
import io.pgjobs.EnqueueOptions;
import io.pgjobs.JobClient;
import io.pgjobs.JobGraph;
import io.pgjobs.cli.config.Settings;
import io.pgjobs.cli.demo.DigestWorkflow;
import io.pgjobs.cli.demo.ResizeImageJob;
import io.pgjobs.cli.demo.SendEmailJob;
import io.pgjobs.cli.demo.SummarizeTextJob;
import io.pgjobs.cli.demo.WebhookDeliveryJob;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.awt.Color;
import java.awt.GradientPaint;
import java.awt.Graphics2D;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import javax.imageio.ImageIO;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code pgjobs demo}: one command that shows everything working. It creates the database and schema if
 * missing, starts the HTTP API and dashboard with a worker for the four demo kinds, and enqueues a stream
 * of sample jobs of every kind that do real work: e-mails go to an SMTP server (an in-process one unless
 * {@code smtp_host} is configured), images are really resized, texts summarised, webhooks signed and
 * posted (to {@value #WEBHOOK_PATH} of the demo's own server, which checks the signature; a fixed path, so
 * sample webhooks of an earlier run still arrive after a restart on the same port).
 *
 * <p>Database: as configured; with nothing configured and no server answering on 127.0.0.1:5432, an
 * embedded PostgreSQL 15 whose data lives under {@code ~/.pgjobs/demo-postgres} and survives restarts.
 */
@Command(
    name = "demo",
    mixinStandardHelpOptions = true,
    versionProvider = VersionProvider.class,
    description = {
      "Run the API, dashboard and a worker, and enqueue a stream of sample jobs of every demo kind.",
      "With no database configured and none answering on 127.0.0.1:5432, starts an embedded PostgreSQL 15"
          + " (data in ~/.pgjobs/demo-postgres)."
    })
final class DemoCommand extends Subcommand {
  private static final Logger log = LoggerFactory.getLogger(DemoCommand.class);
  static final String WEBHOOK_SECRET = "demo-webhook-secret";
  /** Where the demo's server receives the sample webhooks. */
  static final String WEBHOOK_PATH = "/demo/webhook";

  static final int EMBEDDED_PORT = 54329;

  @Mixin
  WorkerOptions worker = new WorkerOptions();

  @Mixin
  ServerOptions server = new ServerOptions();

  @Option(
      names = "--interval",
      paramLabel = "<duration>",
      defaultValue = "2s",
      description =
          "Time between two rounds of sample jobs (one of each kind). Default: ${DEFAULT-VALUE}.")
  String interval;

  @Option(
      names = "--embedded-postgres",
      description =
          "Use the embedded PostgreSQL 15 (data in ~/.pgjobs/demo-postgres, port 54329) even when a"
              + " database is configured or answers on 127.0.0.1:5432.")
  boolean embeddedPostgres;

  @Option(
      names = "--samples",
      paramLabel = "<n>",
      defaultValue = "-1",
      description = "Rounds of sample jobs to enqueue; -1 (default) for no end.")
  int samples;

  @Override
  public Integer call() throws Exception {
    Map<String, String> flags = new LinkedHashMap<>(worker.flags());
    flags.putAll(server.flags());
    Settings settings = settings(flags);
    java.time.Duration every;
    try {
      every = io.pgjobs.config.DurationText.requireBetween(
          "--interval",
          io.pgjobs.config.DurationText.parse(interval),
          java.time.Duration.ofMillis(100),
          java.time.Duration.ofHours(1));
    } catch (IllegalArgumentException e) {
      throw usage(e.getMessage());
    }
    if (samples < -1) {
      throw usage("--samples must be -1 (no end) or a number of rounds, was " + samples);
    }

    if (embeddedPostgres
        || settings.value(Settings.DATABASE_URL).source() == Settings.Source.DEFAULT
            && !answers("127.0.0.1", 5432)) {
      flags.put(Settings.DATABASE_URL, startEmbeddedPostgres());
    }
    if (settings.value(Settings.SMTP_HOST).source() == Settings.Source.DEFAULT) {
      // On smtp_port (1025 unless set) when it is free, which is where a `pgjobs work` beside this
      // demo sends its e-mails by default; else on any free port, and the demo says how to point a
      // worker at it.
      int wanted = settings.smtpPort();
      int smtpPort = portFree(wanted) ? wanted : freePort();
      GreenMail smtp =
          new GreenMail(new ServerSetup(smtpPort, "127.0.0.1", ServerSetup.PROTOCOL_SMTP));
      smtp.start();
      Runtime.getRuntime().addShutdownHook(new Thread(smtp::stop, "pgjobs-demo-smtp-stop"));
      flags.put(Settings.SMTP_HOST, "127.0.0.1");
      flags.put(Settings.SMTP_PORT, Integer.toString(smtpPort));
      out()
          .println("demo SMTP server (in process) on 127.0.0.1:" + smtpPort
              + (smtpPort == wanted
                  ? ""
                  : " (" + wanted + " was taken: a second worker beside this demo needs"
                      + " --smtp-port " + smtpPort + ")"));
    }
    Settings effective = settings(flags);
    Path images = Files.createTempDirectory("pgjobs-demo-images");
    Path source = images.resolve("source.png");
    writeSampleImage(source);
    AtomicLong received = new AtomicLong();
    // The webhook receiver is a fixed path of the demo's own server, so sample jobs of an earlier
    // run (on the same port) still reach it after a restart.
    return ServeCommand.run(
        this,
        effective,
        true,
        server.insecure,
        api -> api.receiver(
            WEBHOOK_PATH,
            (header, body) ->
                receive(header.apply(WebhookDeliveryJob.SIGNATURE_HEADER), body, received)),
        (client, base) -> {
          String webhookUrl = base + WEBHOOK_PATH;
          Thread.ofVirtual()
              .name("pgjobs-demo-samples")
              .start(() -> stream(client, every, webhookUrl, source, images));
        });
  }

  /**
   * Enqueues one job of every kind per round, and in the first round and every tenth a job graph of the
   * four kinds, until stopped or {@code samples} rounds are done.
   */
  private void stream(
      JobClient client, java.time.Duration every, String webhookUrl, Path source, Path images) {
    String[] texts = {
      "PostgreSQL is the only moving part. Jobs are rows. Workers claim rows with SKIP LOCKED, so two workers"
          + " never take the same job. Finished jobs move to their own table in the same statement. A crash"
          + " never loses a job. Notifications wake idle workers at once. Polling remains as a fallback.",
      "Background jobs let a web request answer quickly. The slow part runs later, on a worker. Retries"
          + " with backoff absorb passing failures. Dead letters keep what failed for good. Idempotency keys"
          + " stop duplicates. Progress reports show users how far a job has come."
    };
    for (long round = 1; samples < 0 || round <= samples; round++) {
      try {
        client.enqueue(
            SummarizeTextJob.TYPE,
            new SummarizeTextJob.SummarizeText(texts[(int) (round % 2)], 2),
            EnqueueOptions.builder().context("demo round " + round).build());
        client.enqueue(
            ResizeImageJob.TYPE,
            new ResizeImageJob.ResizeImage(
                source.toString(),
                64 + (int) (round % 5) * 32,
                48 + (int) (round % 3) * 24,
                images.resolve("thumb-" + round + ".png").toString()),
            EnqueueOptions.builder().context("demo round " + round).build());
        client.enqueue(
            SendEmailJob.TYPE,
            new SendEmailJob.SendEmail(
                "demo" + round + "@example.com",
                "pgjobs demo #" + round,
                "Hello from pgjobs, round " + round + "."),
            EnqueueOptions.builder().context("demo round " + round).build());
        client.enqueue(
            WebhookDeliveryJob.TYPE,
            new WebhookDeliveryJob.WebhookDelivery(
                round % 10 == 0 ? webhookUrl.replace(WEBHOOK_PATH, "/demo/gone") : webhookUrl,
                "{\"round\": " + round + "}",
                WEBHOOK_SECRET),
            EnqueueOptions.builder().context("demo round " + round).build());
        if (round % 10 == 1) {
          // A job graph, the first round and every tenth: two jobs at once, an e-mail once both
          // succeeded, then a webhook whatever the e-mail's outcome. The dashboard draws it on each
          // of its jobs' pages.
          String context = "demo graph round " + round;
          client.enqueueGraph(JobGraph.builder()
              .add(
                  "summarize",
                  SummarizeTextJob.TYPE,
                  new SummarizeTextJob.SummarizeText(texts[(int) (round % 2)], 1),
                  EnqueueOptions.builder().context(context).build())
              .add(
                  "thumbnail",
                  ResizeImageJob.TYPE,
                  new ResizeImageJob.ResizeImage(
                      source.toString(),
                      96,
                      72,
                      images.resolve("graph-" + round + ".png").toString()),
                  EnqueueOptions.builder().context(context).build())
              .add(
                  "email",
                  SendEmailJob.TYPE,
                  new SendEmailJob.SendEmail(
                      "editor" + round + "@example.com",
                      "pgjobs demo graph #" + round,
                      "The summary and the thumbnail are ready."),
                  EnqueueOptions.builder().context(context).build(),
                  Dependency.on("summarize"),
                  Dependency.on("thumbnail"))
              .add(
                  "notify",
                  WebhookDeliveryJob.TYPE,
                  new WebhookDeliveryJob.WebhookDelivery(
                      webhookUrl, "{\"graph_round\": " + round + "}", WEBHOOK_SECRET),
                  EnqueueOptions.builder().context(context).build(),
                  Dependency.on("email").runAnyway())
              .build());
        }
        if (round % 10 == 1) {
          // A run of the demo's workflow: summarize, e-mail, webhook, each step recorded.
          client.enqueue(
              DigestWorkflow.TYPE.jobType(),
              new DigestWorkflow.Digest(
                  texts[(int) (round % 2)],
                  "reader" + round + "@example.com",
                  webhookUrl,
                  WEBHOOK_SECRET),
              EnqueueOptions.builder().context("demo workflow round " + round).build());
        }
        Thread.sleep(every); // a demo's pace, not a wait for a condition
      } catch (InterruptedException e) {
        return;
      } catch (RuntimeException e) {
        log.warn("demo could not enqueue round {}: {}", round, e.getMessage());
        try {
          Thread.sleep(every);
        } catch (InterruptedException ie) {
          return;
        }
      }
    }
  }

  /** The webhook receiver: 200 for a valid signature, 401 for a bad or missing one. */
  private static int receive(String signature, byte[] body, AtomicLong received) {
    String expected = hmac(body);
    boolean valid = signature != null
        && java.security.MessageDigest.isEqual(
            expected.getBytes(StandardCharsets.US_ASCII),
            signature.toLowerCase(java.util.Locale.ROOT).getBytes(StandardCharsets.US_ASCII));
    if (valid) {
      received.incrementAndGet();
    }
    return valid ? 200 : 401;
  }

  private static String hmac(byte[] body) {
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(WEBHOOK_SECRET.getBytes(StandardCharsets.UTF_8), "HmacSHA256"));
      return HexFormat.of().formatHex(mac.doFinal(body));
    } catch (java.security.GeneralSecurityException e) {
      throw new IllegalStateException(e);
    }
  }

  private static void writeSampleImage(Path target) throws IOException {
    BufferedImage image = new BufferedImage(640, 480, BufferedImage.TYPE_INT_RGB);
    Graphics2D g = image.createGraphics();
    g.setPaint(new GradientPaint(
        0, 0, new Color(0x33, 0x66, 0x99), 640, 480, new Color(0xee, 0xaa, 0x33)));
    g.fillRect(0, 0, 640, 480);
    g.dispose();
    ImageIO.write(image, "png", target.toFile());
  }

  /** Starts (or restarts, on the same data) the embedded server; returns its database URL. */
  private String startEmbeddedPostgres() throws IOException {
    Path data = Path.of(System.getProperty("user.home"), ".pgjobs", "demo-postgres");
    Files.createDirectories(data.getParent());
    out()
        .println("starting an embedded PostgreSQL 15 on port " + EMBEDDED_PORT + " (data in " + data
            + ")");
    out().flush();
    EmbeddedPostgres postgres = EmbeddedPostgres.builder()
        .setPort(EMBEDDED_PORT)
        .setDataDirectory(data)
        .setCleanDataDirectory(false)
        // Its own hook would stop the server as soon as the JVM begins to exit, side by side with
        // the worker's graceful shutdown (hooks run in parallel): the worker then spent its grace
        // on a dead database, 10 s per pooled connection it waited for, and the demo took over a
        // minute to exit. The hook below stops it once the worker is done.
        .setRegisterShutdownHook(false)
        .start();
    Runtime.getRuntime()
        .addShutdownHook(new Thread(
            () -> {
              // Shutdown hooks run side by side: let the worker finish its graceful shutdown on a
              // live database (it gives its running jobs back) before the database goes.
              ServeCommand.awaitClosed(java.time.Duration.ofSeconds(45));
              try {
                postgres.close();
              } catch (IOException e) {
                log.warn("could not stop the embedded PostgreSQL: {}", e.getMessage());
              }
            },
            "pgjobs-demo-postgres-stop"));
    return "postgresql://postgres@127.0.0.1:" + EMBEDDED_PORT + "/pgjobs";
  }

  private static boolean answers(String host, int port) {
    try (Socket socket = new Socket()) {
      socket.connect(new InetSocketAddress(host, port), 500);
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  /** True if nothing listens on 127.0.0.1:{@code port} and this process may bind it. */
  private static boolean portFree(int port) {
    try (ServerSocket socket = new ServerSocket()) {
      socket.setReuseAddress(true);
      socket.bind(new java.net.InetSocketAddress("127.0.0.1", port));
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  private static int freePort() throws IOException {
    try (ServerSocket socket = new ServerSocket(0)) {
      return socket.getLocalPort();
    }
  }
}
