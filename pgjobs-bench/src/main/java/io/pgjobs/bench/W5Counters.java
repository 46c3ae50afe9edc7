package io.pgjobs.bench;

import java.io.IOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * W5's counters, shared by the bench, the producer process and the worker process through a small
 * memory-mapped file: jobs offered (handed to {@code enqueueAll}, counted before the call), jobs whose
 * handler started, jobs whose handler returned. Each process adds to its own counters with atomic
 * updates on the mapping; the others read them at any moment without a round trip, so the depth
 * (offered − started) at a window's end costs nothing, and the peak probe's producer can keep it at a
 * target every 10 ms.
 */
final class W5Counters implements AutoCloseable {
  static final int OFFERED = 0;
  static final int STARTED = 1;
  static final int COMPLETED = 2;
  private static final int SLOTS = 8;
  private static final VarHandle LONGS =
      MethodHandles.byteBufferViewVarHandle(long[].class, ByteOrder.nativeOrder());

  private final Path file;
  private final FileChannel channel;
  private final MappedByteBuffer buffer;

  private W5Counters(Path file, FileChannel channel, MappedByteBuffer buffer) {
    this.file = file;
    this.channel = channel;
    this.buffer = buffer;
  }

  /** Creates a zeroed counter file (the bench does, before it starts the processes); close deletes it. */
  static W5Counters create() throws IOException {
    Path file = Files.createTempFile("pgjobs-bench-w5-", ".counters");
    Files.write(file, new byte[SLOTS * Long.BYTES]);
    return open(file);
  }

  /** Maps an existing counter file. */
  static W5Counters open(Path file) throws IOException {
    FileChannel channel = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE);
    MappedByteBuffer buffer = channel.map(FileChannel.MapMode.READ_WRITE, 0, SLOTS * Long.BYTES);
    return new W5Counters(file, channel, buffer);
  }

  /** The file, for the child processes' command lines. */
  Path file() {
    return file;
  }

  long add(int slot, long delta) {
    return (long) LONGS.getAndAdd(buffer, slot * Long.BYTES, delta) + delta;
  }

  long get(int slot) {
    return (long) LONGS.getVolatile(buffer, slot * Long.BYTES);
  }

  @Override
  public void close() throws IOException {
    channel.close();
  }

  /** Closes the mapping and deletes the file (the bench's copy, after the processes exited). */
  void delete() throws IOException {
    close();
    Files.deleteIfExists(file);
  }
}
