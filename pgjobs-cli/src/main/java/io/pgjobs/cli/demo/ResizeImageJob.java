package io.pgjobs.cli.demo;

import io.pgjobs.DiscardJobException;
import io.pgjobs.JobContext;
import io.pgjobs.JobType;
import io.pgjobs.PayloadValidator.FieldProblem;
import io.pgjobs.worker.JobWorker;
import java.awt.Color;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import javax.imageio.ImageIO;
import javax.imageio.ImageReader;
import javax.imageio.stream.ImageInputStream;

/**
 * The {@code resize_image} demo kind: scales a PNG or JPEG image to a given size with
 * {@code javax.imageio} and {@code Graphics2D} (bicubic interpolation) and writes it as PNG or JPEG,
 * chosen by the target's extension.
 *
 * <p>Payload {@code {"source": "/abs/in.jpg", "width": 320, "height": 200, "target": "/abs/out.png"}};
 * output {@code {"target", "width", "height", "format", "bytes"}}. The target is written to a temporary
 * file next to it and then moved into place, so a reader never sees half an image and a repeated attempt
 * simply writes it again. A source that is missing or not an image fails the job at once; other I/O
 * errors are retried.
 */
public final class ResizeImageJob {
  /**
   * The payload.
   *
   * @param source absolute path of a PNG or JPEG file
   * @param width target width in pixels, 1 to {@value #MAX_SIZE}
   * @param height target height in pixels, 1 to {@value #MAX_SIZE}
   * @param target absolute path to write, ending in .png, .jpg or .jpeg
   */
  public record ResizeImage(String source, Integer width, Integer height, String target) {}

  /** Largest target width or height: {@value}. */
  public static final int MAX_SIZE = 10_000;
  /** Largest source image read, in pixels (a guard against decompression bombs): {@value}. */
  public static final long MAX_SOURCE_PIXELS = 100_000_000L;

  /** The job type, with payload validation. */
  public static final JobType<ResizeImage> TYPE =
      JobType.of("resize_image", ResizeImage.class).withValidator(ResizeImageJob::validate);

  /** The type with its handler. */
  public JobWorker.Registration<ResizeImage> registration() {
    return new JobWorker.Registration<>(TYPE, this::run);
  }

  /**
   * Checks the payload: an existing readable source file, sizes from 1 to {@value #MAX_SIZE}, a target
   * ending in .png, .jpg or .jpeg that is not the source. Paths must be absolute, since the worker that
   * runs the job need not share the enqueuer's working directory.
   */
  public static List<FieldProblem> validate(ResizeImage job) {
    if (job == null) {
      return PayloadProblems.missingPayload("source, width, height and target");
    }
    PayloadProblems problems = new PayloadProblems();
    Path source = path(problems, "source", job.source());
    if (source != null) {
      if (!Files.isRegularFile(source)) {
        problems.add("source", "must be an existing file, '" + job.source() + "' is not");
      } else if (!Files.isReadable(source)) {
        problems.add("source", "must be readable, '" + job.source() + "' is not");
      }
    }
    problems.range("width", job.width(), 1, MAX_SIZE);
    problems.range("height", job.height(), 1, MAX_SIZE);
    Path target = path(problems, "target", job.target());
    if (target != null) {
      if (formatOf(target) == null) {
        problems.add(
            "target",
            "must end in .png, .jpg or .jpeg (the output format), was '" + job.target() + "'");
      } else if (source != null && source.normalize().equals(target.normalize())) {
        problems.add("target", "must differ from source (the original is kept)");
      } else if (Files.isDirectory(target)) {
        problems.add("target", "must be a file path, '" + job.target() + "' is a directory");
      }
    }
    return problems.list();
  }

  private static Path path(PayloadProblems problems, String field, String value) {
    if (!problems.text(field, value, 4096, true)) {
      return null;
    }
    Path path;
    try {
      path = Path.of(value);
    } catch (InvalidPathException e) {
      problems.add(field, "is not a valid path: " + e.getReason());
      return null;
    }
    if (!path.isAbsolute()) {
      problems.add(field, "must be an absolute path, was '" + value + "'");
      return null;
    }
    return path;
  }

  /** {@code png} or {@code jpeg} from the file name, or null. */
  static String formatOf(Path path) {
    String name =
        path.getFileName() == null ? "" : path.getFileName().toString().toLowerCase(Locale.ROOT);
    if (name.endsWith(".png")) {
      return "png";
    }
    if (name.endsWith(".jpg") || name.endsWith(".jpeg")) {
      return "jpeg";
    }
    return null;
  }

  /** Resizes the image. */
  Object run(JobContext ctx, ResizeImage job) throws IOException {
    if (job == null
        || job.source() == null
        || job.target() == null
        || job.width() == null
        || job.height() == null) {
      throw new DiscardJobException("invalid payload: " + validate(job));
    }
    Path source = Path.of(job.source());
    Path target = Path.of(job.target());
    String format = formatOf(target);
    if (format == null) {
      throw new DiscardJobException("target must end in .png, .jpg or .jpeg: " + target);
    }
    ctx.progress(10, "reading " + source.getFileName());
    BufferedImage original = read(source);
    stopIfCancelled(ctx);
    ctx.progress(
        40,
        "resizing " + original.getWidth() + "x" + original.getHeight() + " to " + job.width() + "x"
            + job.height());
    BufferedImage resized = resize(original, job.width(), job.height(), format.equals("png"));
    stopIfCancelled(ctx);
    ctx.progress(70, "writing " + target.getFileName());
    long bytes = write(resized, format, target);
    ctx.progress(100, "wrote " + target.getFileName() + " (" + bytes + " bytes)");
    return Map.of(
        "target",
        target.toString(),
        "width",
        resized.getWidth(),
        "height",
        resized.getHeight(),
        "format",
        format,
        "bytes",
        bytes);
  }

  private static BufferedImage read(Path source) throws IOException {
    try (ImageInputStream in = ImageIO.createImageInputStream(Files.newInputStream(source))) {
      Iterator<ImageReader> readers = in == null ? null : ImageIO.getImageReaders(in);
      if (readers == null || !readers.hasNext()) {
        throw new DiscardJobException("source " + source + " is not a PNG or JPEG image");
      }
      ImageReader reader = readers.next();
      try {
        reader.setInput(in, true, true);
        long pixels = (long) reader.getWidth(0) * reader.getHeight(0);
        if (pixels > MAX_SOURCE_PIXELS) {
          throw new DiscardJobException("source " + source + " has " + pixels + " pixels; at most "
              + MAX_SOURCE_PIXELS + " are read");
        }
        return reader.read(0);
      } catch (javax.imageio.IIOException e) {
        throw new DiscardJobException(
            "source " + source + " is not a readable image: " + e.getMessage(), e);
      } finally {
        reader.dispose();
      }
    } catch (NoSuchFileException e) {
      throw new DiscardJobException("source " + source + " does not exist", e);
    }
  }

  /** Scales {@code image} to {@code width} x {@code height} with bicubic interpolation. */
  static BufferedImage resize(BufferedImage image, int width, int height, boolean keepAlpha) {
    BufferedImage out = new BufferedImage(
        width, height, keepAlpha ? BufferedImage.TYPE_INT_ARGB : BufferedImage.TYPE_INT_RGB);
    Graphics2D g = out.createGraphics();
    try {
      if (!keepAlpha) {
        g.setColor(Color.WHITE); // JPEG has no alpha: transparent pixels become white, not black
        g.fillRect(0, 0, width, height);
      }
      g.setRenderingHint(
          RenderingHints.KEY_INTERPOLATION, RenderingHints.VALUE_INTERPOLATION_BICUBIC);
      g.setRenderingHint(RenderingHints.KEY_RENDERING, RenderingHints.VALUE_RENDER_QUALITY);
      g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
      g.drawImage(image, 0, 0, width, height, null);
    } finally {
      g.dispose();
    }
    return out;
  }

  private static long write(BufferedImage image, String format, Path target) throws IOException {
    Path dir = target.toAbsolutePath().getParent();
    Files.createDirectories(dir);
    Path temp = Files.createTempFile(dir, ".resize-", ".tmp");
    try {
      if (!ImageIO.write(image, format, temp.toFile())) {
        throw new IOException("no image writer for " + format);
      }
      try {
        Files.move(
            temp, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
      } catch (AtomicMoveNotSupportedException e) {
        Files.move(temp, target, StandardCopyOption.REPLACE_EXISTING);
      }
      return Files.size(target);
    } finally {
      Files.deleteIfExists(temp);
    }
  }

  private static void stopIfCancelled(JobContext ctx) {
    if (ctx.isCancelled()) {
      throw new IllegalStateException("cancelled");
    }
  }
}
