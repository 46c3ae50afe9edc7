package io.pgjobs.cli;

/** A command could not do what was asked; its message is printed as is and the exit code is 1. */
final class CommandFailedException extends RuntimeException {
  CommandFailedException(String message) {
    super(message);
  }

  CommandFailedException(String message, Throwable cause) {
    super(message, cause);
  }
}
