package io.pgjobs.lifecycle;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A TCP proxy on a loopback port in front of PostgreSQL, for tests that cut a process off from the
 * database: {@link #cut()} closes every connection through it and refuses new ones until
 * {@link #restore()}. Everything else about the database (and other processes' connections) is untouched.
 *
 * <p>It can also act on one message of a client, found by a marker in the bytes the client sends (the
 * text of a statement, or of a parameter): {@link #loseReplyTo(String)} lets the message through and
 * drops the server's answer, closing that client's connection once the answer has come (the server has
 * done the work: a COMMIT committed); {@link #delayMessage(String, Duration)} holds the message back for
 * a while before letting it through.
 */
public final class TcpProxy implements AutoCloseable {
  private final ServerSocket server;
  private final String targetHost;
  private final int targetPort;
  private final Set<Socket> open = ConcurrentHashMap.newKeySet();
  private volatile boolean cut;
  private volatile boolean closed;
  /** The marker of the next message whose reply is lost (one message, then disarmed). */
  private final AtomicReference<String> loseReplyTo = new AtomicReference<>();
  /** The marker of the next message held back, and for how long (one message, then disarmed). */
  private final AtomicReference<Delay> delay = new AtomicReference<>();
  /** How many replies {@link #loseReplyTo} has dropped. */
  private volatile int repliesLost;

  private record Delay(String marker, Duration duration) {}

  /** One connection through the proxy: whether the server's answers to its client are to be dropped. */
  private static final class Link {
    volatile boolean muted;
    final Socket client;

    Link(Socket client) {
      this.client = client;
    }
  }

  /** A proxy in front of {@code targetHost:targetPort}, listening on a free loopback port. */
  public TcpProxy(String targetHost, int targetPort) throws IOException {
    this.targetHost = targetHost;
    this.targetPort = targetPort;
    this.server = new ServerSocket();
    server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
    Thread.ofPlatform().daemon().name("tcp-proxy-accept").start(this::accept);
  }

  /** A proxy in front of the server that {@code jdbcUrl} (a test database's, on this host) names. */
  public static TcpProxy before(String jdbcUrl) throws IOException {
    return new TcpProxy(
        "127.0.0.1", URI.create(jdbcUrl.substring("jdbc:".length())).getPort());
  }

  /** {@code jdbcUrl} (of this proxy's target) through this proxy: the same database and parameters. */
  public String through(String jdbcUrl) {
    URI direct = URI.create(jdbcUrl.substring("jdbc:".length()));
    return "jdbc:postgresql://127.0.0.1:" + port() + direct.getPath() + "?" + direct.getQuery();
  }

  /** The port the proxy listens on. */
  public int port() {
    return server.getLocalPort();
  }

  /**
   * Arms the proxy for one message: the next chunk a client sends that contains {@code marker} is
   * forwarded to the server, and the server's reply to it is dropped; once that reply arrived (so the
   * server has carried the message out) the client's connection is closed, as when a network drops
   * between the two. Other connections are untouched.
   */
  public void loseReplyTo(String marker) {
    loseReplyTo.set(marker);
  }

  /** How many replies were dropped by {@link #loseReplyTo(String)}. */
  public int repliesLost() {
    return repliesLost;
  }

  /**
   * Arms the proxy for one message: the next chunk a client sends that contains {@code marker} is held
   * back for {@code duration}, then forwarded (a slow network between two statements).
   */
  public void delayMessage(String marker, Duration duration) {
    delay.set(new Delay(marker, duration));
  }

  /** True until the message armed by {@link #delayMessage(String, Duration)} has been seen. */
  public boolean delayArmed() {
    return delay.get() != null;
  }

  /** Closes every connection through the proxy, and refuses new ones. */
  public void cut() {
    cut = true;
    for (Socket s : open) {
      closeQuietly(s);
    }
    open.clear();
  }

  /** Lets connections through again. */
  public void restore() {
    cut = false;
  }

  private void accept() {
    while (!closed) {
      Socket client;
      try {
        client = server.accept();
      } catch (IOException e) {
        return;
      }
      if (cut) {
        closeQuietly(client);
        continue;
      }
      try {
        Socket upstream = new Socket(targetHost, targetPort);
        open.add(client);
        open.add(upstream);
        Link link = new Link(client);
        pipe(client, upstream, link, true);
        pipe(upstream, client, link, false);
      } catch (IOException e) {
        closeQuietly(client);
      }
    }
  }

  private void pipe(Socket from, Socket to, Link link, boolean fromClient) {
    Thread.ofPlatform().daemon().name("tcp-proxy-pipe").start(() -> {
      byte[] buffer = new byte[16 * 1024];
      // The end of the previous chunk, so that a marker split between two chunks is found too.
      String tail = "";
      try (InputStream in = from.getInputStream();
          OutputStream out = to.getOutputStream()) {
        int n;
        while ((n = in.read(buffer)) >= 0) {
          if (fromClient) {
            String seen = tail + new String(buffer, 0, n, StandardCharsets.ISO_8859_1);
            tail = seen.substring(Math.max(0, seen.length() - 200));
            Delay d = delay.get();
            if (d != null && seen.contains(d.marker()) && delay.compareAndSet(d, null)) {
              Thread.sleep(d.duration());
            }
            String lose = loseReplyTo.get();
            if (lose != null && seen.contains(lose) && loseReplyTo.compareAndSet(lose, null)) {
              link.muted = true; // before the message goes out: its reply cannot come back sooner
            }
          } else if (link.muted) {
            repliesLost++;
            return; // the reply read is dropped; finally closes both sides
          }
          out.write(buffer, 0, n);
          out.flush();
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } catch (IOException ignored) {
        // one side closed: close both
      } finally {
        closeQuietly(from);
        closeQuietly(to);
        open.remove(from);
        open.remove(to);
      }
    });
  }

  private static void closeQuietly(Socket s) {
    try {
      s.close();
    } catch (IOException ignored) {
      // closing
    }
  }

  @Override
  public void close() throws IOException {
    closed = true;
    server.close();
    cut();
  }
}
