package io.pgjobs.store;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;

/**
 * A borrowed connection handed out with something to do when it is closed (restore a mode, commit a
 * transaction) before it goes back to its pool: {@link #onClose} runs once, in place of the connection's
 * own {@code close()}, and must close it; every other call goes through to the connection.
 */
abstract class ClosingConnection implements InvocationHandler {
  private final Connection connection;
  private boolean closed;

  ClosingConnection(Connection connection) {
    this.connection = connection;
  }

  /** {@code connection} as a proxy whose {@code close()} runs {@code handler}'s {@link #onClose}. */
  static Connection wrap(ClosingConnection handler) {
    return (Connection) Proxy.newProxyInstance(
        ClosingConnection.class.getClassLoader(), new Class<?>[] {Connection.class}, handler);
  }

  /** What closing does; it must close {@code connection} whatever happens before. */
  abstract void onClose(Connection connection) throws SQLException;

  /** What the proxy is, for {@code toString()}. */
  abstract String name();

  @Override
  public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
    switch (method.getName()) {
      case "close" -> {
        if (!closed) {
          closed = true;
          onClose(connection);
        }
        return null;
      }
      case "isClosed" -> {
        if (closed) {
          return true;
        }
      }
      case "unwrap" -> {
        if (((Class<?>) args[0]).isInstance(connection)) {
          return connection;
        }
      }
      case "isWrapperFor" -> {
        if (((Class<?>) args[0]).isInstance(connection)) {
          return true;
        }
      }
      case "equals" -> {
        return proxy == args[0];
      }
      case "hashCode" -> {
        return System.identityHashCode(proxy);
      }
      case "toString" -> {
        return name() + "(" + connection + ")";
      }
      default -> {}
    }
    try {
      return method.invoke(connection, args);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }
}
