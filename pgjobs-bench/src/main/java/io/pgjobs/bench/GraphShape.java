package io.pgjobs.bench;

import io.pgjobs.Dependency;
import io.pgjobs.EnqueueOptions;
import io.pgjobs.JobGraph;
import io.pgjobs.JobType;
import java.util.function.IntFunction;

/**
 * The shapes of the W3G graphs (issue 30, acceptance 5): the same number of jobs as the W3 reference, in
 * one graph. Node names are {@code n<i>}, in the order added; every job of a graph is of one type.
 */
enum GraphShape {
  /** Chains of 50: each job waits for the one before it in its chain. */
  CHAINS {
    @Override
    String label(int jobs) {
      return String.format("%,d chains of 50", jobs / 50);
    }

    @Override
    Dependency[] after(int i, int jobs) {
      return i % 50 == 0 ? NONE : new Dependency[] {Dependency.on("n" + (i - 1))};
    }
  },
  /**
   * Ten chains of a tenth of the jobs each: bound by each link's latency (a link can start only once the
   * one before it has ended), with ten links at most to run at any time.
   */
  LONG_CHAINS {
    @Override
    String label(int jobs) {
      return String.format("10 chains of %,d", jobs / 10);
    }

    @Override
    Dependency[] after(int i, int jobs) {
      return i % (jobs / 10) == 0 ? NONE : new Dependency[] {Dependency.on("n" + (i - 1))};
    }
  },
  /** One root; every other job waits for it. */
  FAN_OUT {
    @Override
    String label(int jobs) {
      return String.format("fan-out: 1 root, %,d children", jobs - 1);
    }

    @Override
    Dependency[] after(int i, int jobs) {
      return i == 0 ? NONE : new Dependency[] {Dependency.on("n0")};
    }
  },
  /** Every job but the last is a parent of the last (its callback). */
  FAN_IN {
    @Override
    String label(int jobs) {
      return String.format("fan-in: %,d parents, 1 callback", jobs - 1);
    }

    @Override
    Dependency[] after(int i, int jobs) {
      if (i < jobs - 1) {
        return NONE;
      }
      Dependency[] all = new Dependency[jobs - 1];
      for (int p = 0; p < all.length; p++) {
        all[p] = Dependency.on("n" + p);
      }
      return all;
    }
  },
  /** Layers of 1,000: each job of a layer waits for two of the layer before (its own place and the next). */
  LAYERED {
    @Override
    String label(int jobs) {
      return String.format("%,d layers of 1,000, 2 parents each", jobs / 1_000);
    }

    @Override
    Dependency[] after(int i, int jobs) {
      if (i < WIDTH) {
        return NONE;
      }
      int layerStart = i - i % WIDTH;
      int below = layerStart - WIDTH;
      int a = below + i % WIDTH;
      int b = below + (i % WIDTH + 1) % WIDTH;
      return new Dependency[] {Dependency.on("n" + a), Dependency.on("n" + b)};
    }
  };

  private static final int WIDTH = 1_000;
  private static final Dependency[] NONE = new Dependency[0];

  /** What the report calls it at {@code jobs}. */
  abstract String label(int jobs);

  /** What job {@code i} of {@code jobs} waits for. */
  abstract Dependency[] after(int i, int jobs);

  /** A graph of {@code jobs} jobs of {@code type} in this shape, payload {@code i} for job {@code i}. */
  <P> JobGraph graph(int jobs, JobType<P> type, IntFunction<P> payload) {
    JobGraph.Builder graph = JobGraph.builder();
    for (int i = 0; i < jobs; i++) {
      graph.add("n" + i, type, payload.apply(i), EnqueueOptions.DEFAULTS, after(i, jobs));
    }
    return graph.build();
  }
}
