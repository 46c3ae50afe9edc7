package io.pgjobs.cli.demo;

import static org.assertj.core.api.Assertions.assertThat;

import io.pgjobs.Job;
import io.pgjobs.JobState;
import io.pgjobs.cli.demo.ResizeImageJob.ResizeImage;
import java.awt.Color;
import java.awt.Graphics2D;
import java.awt.image.BufferedImage;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ResizeImageJobTest extends DemoJobsTestBase {
  @TempDir
  Path dir;

  @BeforeEach
  void worker() {
    startWorker(Map.of());
  }

  /** A 400x300 image, left half red, right half blue. */
  private static BufferedImage redAndBlue() {
    BufferedImage image = new BufferedImage(400, 300, BufferedImage.TYPE_INT_RGB);
    Graphics2D g = image.createGraphics();
    g.setColor(Color.RED);
    g.fillRect(0, 0, 200, 300);
    g.setColor(Color.BLUE);
    g.fillRect(200, 0, 200, 300);
    g.dispose();
    return image;
  }

  @Test
  void resizesAPngAndWritesTheTargetWithTheRequestedSize() throws Exception {
    Path source = dir.resolve("photo.png");
    ImageIO.write(redAndBlue(), "png", source.toFile());
    Path target = dir.resolve("out/thumb.png");

    var id = client
        .enqueue(
            ResizeImageJob.TYPE, new ResizeImage(source.toString(), 100, 75, target.toString()))
        .job()
        .id();

    Job job = awaitState(id, JobState.SUCCEEDED);
    BufferedImage result = ImageIO.read(target.toFile());
    assertThat(result.getWidth()).isEqualTo(100);
    assertThat(result.getHeight()).isEqualTo(75);
    assertThat(new Color(result.getRGB(10, 37))).isEqualTo(Color.RED);
    assertThat(new Color(result.getRGB(90, 37))).isEqualTo(Color.BLUE);
    assertThat(job.output().get("format").asString()).isEqualTo("png");
    assertThat(job.output().get("bytes").asLong()).isEqualTo(Files.size(target));
    assertThat(job.progressPercent()).isEqualTo(100);
  }

  @Test
  void convertsAJpegToAnEnlargedJpeg() throws Exception {
    Path source = dir.resolve("photo.jpg");
    ImageIO.write(redAndBlue(), "jpeg", source.toFile());
    Path target = dir.resolve("big.jpeg");

    var id = client
        .enqueue(
            ResizeImageJob.TYPE, new ResizeImage(source.toString(), 800, 50, target.toString()))
        .job()
        .id();

    awaitState(id, JobState.SUCCEEDED);
    BufferedImage result = ImageIO.read(target.toFile());
    assertThat(result.getWidth()).isEqualTo(800);
    assertThat(result.getHeight()).isEqualTo(50);
    try (var files = Files.list(dir)) {
      assertThat(files.map(p -> p.getFileName().toString()))
          .containsExactlyInAnyOrder("photo.jpg", "big.jpeg");
    }
  }

  @Test
  void failsAtOnceWhenTheSourceIsNotAnImage() throws Exception {
    Path source = dir.resolve("notes.png");
    Files.writeString(source, "not an image");
    File target = dir.resolve("out.png").toFile();

    var id = client
        .enqueue(ResizeImageJob.TYPE, new ResizeImage(source.toString(), 10, 10, target.toString()))
        .job()
        .id();

    Job job = awaitState(id, JobState.FAILED);
    assertThat(job.attempts()).isEqualTo(1);
    assertThat(job.errors()).singleElement().satisfies(e -> {
      assertThat(e.kind()).isEqualTo("discarded");
      assertThat(e.message()).contains("is not a PNG or JPEG image");
    });
    assertThat(target).doesNotExist();
  }
}
