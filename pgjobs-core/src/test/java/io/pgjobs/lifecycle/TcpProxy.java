package io.pgjobs.lifecycle;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A TCP proxy on a loopback port in front of PostgreSQL, for tests that cut a process off from the
 * database: {@link #cut()} closes every connection through it and refuses new ones until
 * {@link #restore()}. Everything else about the database (and other processes' connections) is untouched.
 */
final class TcpProxy implements AutoCloseable {
  private final ServerSocket server;
  private final String targetHost;
  private final int targetPort;
  private final Set<Socket> open = ConcurrentHashMap.newKeySet();
  private volatile boolean cut;
  private volatile boolean closed;

  TcpProxy(String targetHost, int targetPort) throws IOException {
    this.targetHost = targetHost;
    this.targetPort = targetPort;
    this.server = new ServerSocket();
    server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
    Thread.ofPlatform().daemon().name("tcp-proxy-accept").start(this::accept);
  }

  int port() {
    return server.getLocalPort();
  }

  /** Closes every connection through the proxy, and refuses new ones. */
  void cut() {
    cut = true;
    for (Socket s : open) {
      closeQuietly(s);
    }
    open.clear();
  }

  /** Lets connections through again. */
  void restore() {
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
        pipe(client, upstream);
        pipe(upstream, client);
      } catch (IOException e) {
        closeQuietly(client);
      }
    }
  }

  private void pipe(Socket from, Socket to) {
    Thread.ofPlatform().daemon().name("tcp-proxy-pipe").start(() -> {
      byte[] buffer = new byte[16 * 1024];
      try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
        int n;
        while ((n = in.read(buffer)) >= 0) {
          out.write(buffer, 0, n);
          out.flush();
        }
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
