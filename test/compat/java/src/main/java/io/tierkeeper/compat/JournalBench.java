package io.tierkeeper.compat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import java.io.File;
import java.io.IOException;
import java.lang.reflect.Field;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import org.apache.bookkeeper.bookie.BookieImpl;
import org.apache.bookkeeper.bookie.Journal;
import org.apache.bookkeeper.bookie.LedgerDirsManager;
import org.apache.bookkeeper.common.allocator.ByteBufAllocatorBuilder;
import org.apache.bookkeeper.conf.ServerConfiguration;
import org.apache.bookkeeper.stats.Counter;
import org.apache.bookkeeper.stats.Gauge;
import org.apache.bookkeeper.stats.NullStatsLogger;
import org.apache.bookkeeper.stats.OpStatsData;
import org.apache.bookkeeper.stats.OpStatsLogger;
import org.apache.bookkeeper.stats.StatsLogger;
import org.apache.bookkeeper.util.DiskChecker;

/**
 * journal-bench: BookKeeper's own {@link Journal} (the bookie's journal
 * thread, force-write thread, JournalChannel and BufferedChannel) driven on
 * N journal directories, the reference {@code diskbench journal} is
 * measured against (see docs/diskbench.md, "The BookKeeper journal model").
 *
 * <p>Each journal gets one producer thread that keeps {@code --in-flight}
 * entries of {@code --entry-size} bytes outstanding (a closed loop, like
 * bkperf's outstanding-bytes semaphore): it calls
 * {@link Journal#logAddEntry(long, long, ByteBuf, boolean,
 * org.apache.bookkeeper.proto.BookkeeperInternalCallbacks.WriteCallback, Object)}
 * and the callback (run by the force-write thread after fdatasync) frees the
 * slot. An add counts if it was sent after the warm-up and acknowledged
 * before the window closed, as in diskbench; its latency is send → callback.
 * Latencies go into the same log-linear histogram as diskbench's
 * (diskbench/hist.go: 64 sub-buckets per power of two), so percentiles
 * quantise identically.
 *
 * <p>The journal directories are sub-directories {@code .tk-bkjournal-<pid>-<i>}
 * of {@code --dir}, removed at the end (also on SIGINT/SIGTERM) unless
 * {@code --keep-files}.
 */
final class JournalBench {
    private JournalBench() {}

    /**
     * A StatsLogger that keeps what BookKeeper's Journal records (op
     * latencies in the same histogram as the add latency, counters as sums),
     * while {@link #on}; scopes share one set of names.
     */
    static final class Recording implements StatsLogger {
        volatile boolean on;
        boolean buckets;
        final Map<String, Hist> ops = new ConcurrentHashMap<>();
        /** The ops recorded with registerSuccessfulValue: counts or bytes, not nanoseconds. */
        final Map<String, Boolean> values = new ConcurrentHashMap<>();
        final Map<String, AtomicLong> counts = new ConcurrentHashMap<>();

        @Override
        public OpStatsLogger getOpStatsLogger(String name) {
            Hist h = ops.computeIfAbsent(name, k -> new Hist());
            return new OpStatsLogger() {
                @Override
                public void registerFailedEvent(long eventLatency, TimeUnit unit) {}

                @Override
                public void registerSuccessfulEvent(long eventLatency, TimeUnit unit) {
                    if (on) {
                        h.record(unit.toNanos(eventLatency));
                    }
                }

                @Override
                public void registerSuccessfulValue(long value) {
                    values.put(name, true);
                    if (on) {
                        h.record(value);
                    }
                }

                @Override
                public void registerFailedValue(long value) {}

                @Override
                public OpStatsData toOpStatsData() {
                    return null;
                }

                @Override
                public void clear() {}
            };
        }

        @Override
        public OpStatsLogger getThreadScopedOpStatsLogger(String name) {
            return getOpStatsLogger(name);
        }

        @Override
        public Counter getCounter(String name) {
            AtomicLong c = counts.computeIfAbsent(name, k -> new AtomicLong());
            return new Counter() {
                @Override
                public void clear() {}

                @Override
                public void inc() {
                    addCount(1);
                }

                @Override
                public void dec() {
                    addCount(-1);
                }

                @Override
                public void addCount(long delta) {
                    if (on) {
                        c.addAndGet(delta);
                    }
                }

                @Override
                public void addLatency(long eventLatency, TimeUnit unit) {
                    addCount(unit.toNanos(eventLatency));
                }

                @Override
                public Long get() {
                    return c.get();
                }
            };
        }

        @Override
        public Counter getThreadScopedCounter(String name) {
            return getCounter(name);
        }

        @Override
        public <T extends Number> void registerGauge(String name, Gauge<T> gauge) {}

        @Override
        public <T extends Number> void unregisterGauge(String name, Gauge<T> gauge) {}

        @Override
        public StatsLogger scope(String name) {
            return this;
        }

        @Override
        public void removeScope(String name, StatsLogger statsLogger) {}

        Map<String, Object> summary() {
            Map<String, Object> m = new LinkedHashMap<>();
            ops.keySet().stream().sorted().forEach(k -> {
                Map<String, Object> h = ops.get(k).summary(buckets);
                if (values.containsKey(k)) {
                    h.put("values", true);
                }
                m.put(k, h);
            });
            counts.keySet().stream().sorted().forEach(k -> m.put(k, counts.get(k).get()));
            return m;
        }
    }

    /** One journal under test. */
    private static final class Lane {
        final int index;
        final File dir;
        final Journal journal;
        final Semaphore slots;
        final Hist addLat = new Hist();
        final AtomicLong sent = new AtomicLong();
        final AtomicLong acked = new AtomicLong();
        long counted;
        long countedBytes;

        Lane(int index, File dir, Journal journal, int inFlight) {
            this.index = index;
            this.dir = dir;
            this.journal = journal;
            this.slots = new Semaphore(inFlight);
        }
    }

    static Object run(Args a) throws Exception {
        String dir = a.req("dir");
        int journals = a.intv("journals", 1);
        int entrySize = a.intv("entry-size", 4096);
        int inFlightArg = a.intv("in-flight", 0);
        long durationMs = a.longv("duration-ms", 5000);
        long warmupMs = a.longv("warmup-ms", 1000);
        long maxEntries = a.longv("entries", 0);
        long maxBytes = a.longv("max-bytes", 0);
        boolean keep = a.bool("keep-files");
        boolean buckets = a.bool("latency-buckets");
        // The journal settings, under BookKeeper's own names; defaults are
        // Pulsar's shipped conf/bookkeeper.conf (diskbench uses the same).
        ServerConfiguration conf = new ServerConfiguration();
        conf.setJournalWriteBufferSizeKB(a.intv("journalWriteBufferSizeKB", 64));
        conf.setJournalMaxGroupWaitMSec(a.longv("journalMaxGroupWaitMSec", 1));
        conf.setJournalBufferedWritesThreshold(a.longv("journalBufferedWritesThreshold", 512 * 1024));
        conf.setJournalBufferedEntriesThreshold(a.intv("journalBufferedEntriesThreshold", 0));
        conf.setJournalFlushWhenQueueEmpty(Boolean.parseBoolean(a.str("journalFlushWhenQueueEmpty", "false")));
        conf.setJournalAlignmentSize(a.intv("journalAlignmentSize", 4096));
        conf.setJournalFormatVersionToWrite(a.intv("journalFormatVersionToWrite", 5));
        conf.setProperty("journalPreAllocSizeMB", a.intv("journalPreAllocSizeMB", 16));
        conf.setMaxJournalSizeMB(a.longv("journalMaxSizeMB", 2048));
        conf.setJournalRemovePagesFromCache(Boolean.parseBoolean(a.str("journalRemoveFromPageCache", "true")));
        conf.setJournalSyncData(Boolean.parseBoolean(a.str("journalSyncData", "true")));
        conf.setJournalQueueSize(a.intv("journalQueueSize", 10_000));
        a.done();
        if (journals < 1 || journals > 64) {
            throw new Args.UsageException("--journals " + journals + " (want 1..64)");
        }
        if (entrySize < 1 || entrySize > 64 << 20) {
            throw new Args.UsageException("--entry-size " + entrySize + " (want 1 B .. 64 MiB)");
        }
        int inFlight = inFlightArg > 0 ? inFlightArg
                : defaultInFlight(conf.getJournalBufferedWritesThreshold(), entrySize);

        Path root = Path.of(dir).toAbsolutePath();
        if (!Files.isDirectory(root)) {
            throw new Args.UsageException("--dir " + root + " is not a directory");
        }
        long pid = ProcessHandle.current().pid();
        List<File> dirs = new ArrayList<>();
        for (int i = 0; i < journals; i++) {
            dirs.add(root.resolve(".tk-bkjournal-" + pid + "-" + i).toFile());
        }
        File ledgers = root.resolve(".tk-bkjournal-" + pid + "-ledgers").toFile();
        AtomicBoolean cleaned = new AtomicBoolean(keep);
        Runnable cleanup = () -> {
            if (cleaned.compareAndSet(false, true)) {
                for (File d : dirs) {
                    deleteTree(d.toPath());
                }
                deleteTree(ledgers.toPath());
            }
        };
        Thread hook = new Thread(cleanup, "journal-bench-cleanup");
        Runtime.getRuntime().addShutdownHook(hook);
        try {
            return measure(conf, dirs, ledgers, entrySize, inFlight, durationMs, warmupMs, maxEntries, maxBytes, keep,
                    buckets);
        } finally {
            cleanup.run();
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException ignored) {
                // shutting down already
            }
        }
    }

    /** Entries in flight per journal when not given: 2 × journalBufferedWritesThreshold worth (diskbench's rule). */
    static int defaultInFlight(long threshold, int entrySize) {
        long n = (2 * Math.max(threshold, 1) + entrySize - 1) / entrySize;
        return (int) Math.max(1, Math.min(n, 10_000));
    }

    private static Object measure(ServerConfiguration conf, List<File> dirs, File ledgers, int entrySize,
                                  int inFlight, long durationMs, long warmupMs, long maxEntries, long maxBytes,
                                  boolean keep, boolean buckets) throws Exception {
        for (File d : dirs) {
            if (!d.mkdir()) {
                throw new IOException("cannot create " + d);
            }
        }
        String[] names = dirs.stream().map(File::getPath).toArray(String[]::new);
        conf.setJournalDirsName(names);
        conf.setLedgerDirNames(new String[] {ledgers.getPath()});
        for (File cur : BookieImpl.getCurrentDirectories(conf.getLedgerDirs())) {
            if (!cur.mkdirs() && !cur.isDirectory()) {
                throw new IOException("cannot create " + cur);
            }
            // An empty log mark (journal 0, offset 0), as a fresh bookie's
            // first checkpoint writes it: Journal's constructor reads it
            // and logs an error when it is missing.
            byte[] mark = new byte[16];
            Files.write(cur.toPath().resolve("lastMark"), mark);
            for (int i = 0; i < dirs.size(); i++) {
                Files.write(cur.toPath().resolve("lastMark." + i), mark);
            }
        }
        ByteBufAllocator alloc = ByteBufAllocatorBuilder.create()
                .poolingPolicy(conf.getAllocatorPoolingPolicy())
                .poolingConcurrency(conf.getAllocatorPoolingConcurrency())
                .outOfMemoryPolicy(conf.getAllocatorOutOfMemoryPolicy())
                .leakDetectionPolicy(conf.getAllocatorLeakDetectionPolicy())
                .build();
        LedgerDirsManager ldm = new LedgerDirsManager(conf, conf.getLedgerDirs(),
                new DiskChecker(conf.getDiskUsageThreshold(), conf.getDiskUsageWarnThreshold()),
                NullStatsLogger.INSTANCE);
        List<Lane> lanes = new ArrayList<>();
        // BookKeeper's own timings: the Journal's stats (journal_sync is its
        // fdatasync, journal_queue_latency enqueue → taken by the journal
        // thread, journal_flush_latency the group's write, the flush
        // counters why groups were flushed), recorded in the measured
        // window only.
        Recording stats = new Recording();
        stats.buckets = buckets;
        for (int i = 0; i < dirs.size(); i++) {
            Journal j = new Journal(i, dirs.get(i), conf, ldm, stats, alloc);
            lanes.add(new Lane(i, dirs.get(i), j, inFlight));
        }
        for (Lane l : lanes) {
            l.journal.start();
        }

        byte[] payload = new byte[entrySize];
        ThreadLocalRandom.current().nextBytes(payload);
        ByteBuf payloadBuf = Unpooled.wrappedBuffer(payload);
        long perJournalEntries = maxEntries > 0 ? maxEntries : Long.MAX_VALUE;
        long perJournalBytes = maxBytes > 0 ? Math.max(1, maxBytes / dirs.size()) : Long.MAX_VALUE;

        final long base = System.nanoTime();
        final long measureStart = base + TimeUnit.MILLISECONDS.toNanos(Math.max(0, warmupMs));
        final long plannedEnd = measureStart + TimeUnit.MILLISECONDS.toNanos(durationMs);
        AtomicLong windowEnd = new AtomicLong(plannedEnd);
        AtomicBoolean stop = new AtomicBoolean(false);
        String[] stopReason = {"duration"};
        List<Thread> producers = new ArrayList<>();
        for (Lane l : lanes) {
            Thread t = new Thread(() -> {
                long entryId = 0;
                long ledgerId = 1 + l.index;
                try {
                    while (!stop.get()) {
                        if (!l.slots.tryAcquire(100, TimeUnit.MILLISECONDS)) {
                            continue;
                        }
                        if (stop.get()) {
                            break;
                        }
                        if (l.sent.get() >= perJournalEntries || l.sent.get() * (long) entrySize >= perJournalBytes) {
                            synchronized (stopReason) {
                                if (!stop.get()) {
                                    stopReason[0] = maxEntries > 0 ? "entries" : "byte budget";
                                    windowEnd.set(Math.min(windowEnd.get(), System.nanoTime()));
                                }
                            }
                            break;
                        }
                        l.sent.incrementAndGet();
                        ByteBuf buf = payloadBuf.retainedDuplicate();
                        final long sendTime = System.nanoTime();
                        l.journal.logAddEntry(ledgerId, entryId++, buf, false, (rc, lid, eid, addr, ctx) -> {
                            long now = System.nanoTime();
                            buf.release();
                            l.slots.release();
                            if (rc != 0) {
                                Tool.log("journal " + l.index + ": add failed rc=" + rc);
                                return;
                            }
                            l.acked.incrementAndGet();
                            if (sendTime >= measureStart && now <= windowEnd.get()) {
                                l.addLat.record(now - sendTime);
                            }
                        }, null);
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }, "journal-bench-producer-" + l.index);
            t.setDaemon(true);
            producers.add(t);
            t.start();
        }
        // The controller: stop at the window's end, or when every producer has
        // stopped on its own (entries or byte budget).
        while (System.nanoTime() < plannedEnd) {
            if (!stats.on && System.nanoTime() >= measureStart) {
                stats.on = true;
            }
            boolean alive = false;
            for (Thread t : producers) {
                alive |= t.isAlive();
            }
            if (!alive) {
                break;
            }
            Thread.sleep(Math.max(1, Math.min(50, (plannedEnd - System.nanoTime()) / 1_000_000)));
        }
        synchronized (stopReason) {
            windowEnd.set(Math.min(windowEnd.get(), System.nanoTime()));
            stop.set(true);
        }
        stats.on = false;
        for (Thread t : producers) {
            t.join(10_000);
        }
        // Let the adds in flight complete (their callbacks fall outside the window).
        long drainDeadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        for (Lane l : lanes) {
            while (l.acked.get() < l.sent.get() && System.nanoTime() < drainDeadline) {
                Thread.sleep(1);
            }
        }
        for (Lane l : lanes) {
            l.journal.shutdown();
        }
        long end = windowEnd.get();
        double seconds = Math.max(0, end - measureStart) / 1e9;

        Hist all = new Hist();
        List<Object> perJournal = new ArrayList<>();
        long totalEntries = 0;
        for (Lane l : lanes) {
            all.merge(l.addLat);
            l.counted = l.addLat.n;
            l.countedBytes = l.counted * (long) entrySize;
            totalEntries += l.counted;
            Map<String, Object> pj = new LinkedHashMap<>();
            pj.put("dir", l.dir.getPath());
            pj.put("entries", l.counted);
            pj.put("bytesPerSec", seconds > 0 ? l.countedBytes / seconds : 0);
            pj.put("sent", l.sent.get());
            pj.put("acked", l.acked.get());
            pj.put("files", listFiles(l.dir));
            perJournal.add(pj);
        }
        Map<String, Object> settings = new LinkedHashMap<>();
        settings.put("journalWriteBufferSizeKB", conf.getJournalWriteBufferSizeKB());
        settings.put("journalMaxGroupWaitMSec", conf.getJournalMaxGroupWaitMSec());
        settings.put("journalBufferedWritesThreshold", conf.getJournalBufferedWritesThreshold());
        settings.put("journalBufferedEntriesThreshold", conf.getJournalBufferedEntriesThreshold());
        settings.put("journalFlushWhenQueueEmpty", conf.getJournalFlushWhenQueueEmpty());
        settings.put("journalAlignmentSize", conf.getJournalAlignmentSize());
        settings.put("journalFormatVersionToWrite", conf.getJournalFormatVersionToWrite());
        settings.put("journalPreAllocSizeMB", conf.getJournalPreAllocSizeMB());
        settings.put("journalMaxSizeMB", conf.getMaxJournalSizeMB());
        settings.put("journalRemoveFromPageCache", conf.getJournalRemovePagesFromCache());
        settings.put("journalSyncData", conf.getJournalSyncData());
        settings.put("journalQueueSize", conf.getJournalQueueSize());

        Map<String, Object> res = new LinkedHashMap<>();
        res.put("bookkeeper", Journal.class.getPackage().getImplementationVersion());
        res.put("journals", lanes.size());
        res.put("entrySize", entrySize);
        res.put("inFlight", inFlight);
        res.put("settings", settings);
        res.put("fadvise", fadvisePossible());
        res.put("warmupSec", (measureStart - base) / 1e9);
        res.put("durationSec", seconds);
        res.put("stopReason", stopReason[0]);
        res.put("entries", totalEntries);
        res.put("bytes", totalEntries * (long) entrySize);
        res.put("bytesPerSec", seconds > 0 ? totalEntries * (double) entrySize / seconds : 0);
        res.put("addLatency", all.summary(buckets));
        res.put("bookkeeperStats", stats.summary());
        res.put("perJournal", perJournal);
        res.put("keptFiles", keep);
        return res;
    }

    private static List<Object> listFiles(File dir) throws IOException {
        List<Object> out = new ArrayList<>();
        try (Stream<Path> s = Files.list(dir.toPath())) {
            for (Path p : s.sorted().toList()) {
                Map<String, Object> f = new LinkedHashMap<>();
                f.put("name", p.getFileName().toString());
                f.put("size", Files.size(p));
                out.add(f);
            }
        }
        return out;
    }

    /** Whether BookKeeper's PageCacheUtil can call posix_fadvise (native-io loaded). */
    private static Object fadvisePossible() {
        try {
            Class<?> c = Class.forName("org.apache.bookkeeper.util.PageCacheUtil");
            Field f = c.getDeclaredField("fadvisePossible");
            f.setAccessible(true);
            return f.getBoolean(null);
        } catch (ReflectiveOperationException | RuntimeException e) {
            return null;
        }
    }

    private static void deleteTree(Path p) {
        if (!Files.exists(p)) {
            return;
        }
        try (Stream<Path> s = Files.walk(p)) {
            for (Path q : s.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(q);
            }
        } catch (IOException e) {
            Tool.log("cleanup " + p + ": " + e);
        }
    }

    /**
     * The log-linear histogram of diskbench/hist.go (values in ns): values
     * below 2^7 exact, every power of two above split into 64 buckets; a
     * quantile is the midpoint of the bucket holding the ceil(q·n)-th value,
     * clamped to [min, max].
     */
    static final class Hist {
        static final int SUB_BITS = 6;
        final long[] counts = new long[(64 - SUB_BITS) * (1 << SUB_BITS) + (1 << (SUB_BITS + 1))];
        long n;
        double sum;
        long min;
        long max;

        static int index(long v) {
            if (v < 0) {
                v = 0;
            }
            int shift = 64 - Long.numberOfLeadingZeros(v) - SUB_BITS - 1;
            if (shift < 0) {
                shift = 0;
            }
            return (shift << SUB_BITS) + (int) (v >>> shift);
        }

        static long[] low(int i) {
            if (i < 1 << (SUB_BITS + 1)) {
                return new long[] {i, 1};
            }
            int shift = (i >> SUB_BITS) - 1;
            long mant = i - ((long) shift << SUB_BITS);
            return new long[] {mant << shift, 1L << shift};
        }

        synchronized void record(long v) {
            if (v < 0) {
                v = 0;
            }
            counts[index(v)]++;
            if (n == 0 || v < min) {
                min = v;
            }
            if (v > max) {
                max = v;
            }
            n++;
            sum += v;
        }

        synchronized void merge(Hist o) {
            synchronized (o) {
                if (o.n == 0) {
                    return;
                }
                for (int i = 0; i < counts.length; i++) {
                    counts[i] += o.counts[i];
                }
                if (n == 0 || o.min < min) {
                    min = o.min;
                }
                max = Math.max(max, o.max);
                n += o.n;
                sum += o.sum;
            }
        }

        long quantile(double q) {
            if (n == 0) {
                return 0;
            }
            long rank = Math.max(1, (long) Math.ceil(q * n));
            long seen = 0;
            for (int i = 0; i < counts.length; i++) {
                if (counts[i] == 0) {
                    continue;
                }
                seen += counts[i];
                if (seen >= rank) {
                    long[] lw = low(i);
                    long v = lw[0] + (lw[1] - 1) / 2;
                    return Math.max(min, Math.min(max, v));
                }
            }
            return max;
        }

        /**
         * The quantiles, and with {@code buckets} the non-empty buckets as
         * [lowest ns, count] pairs in ascending order (diskbench's
         * Latency.Buckets, which diskbench.PoolLatencies pools).
         */
        synchronized Map<String, Object> summary(boolean buckets) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("count", n);
            m.put("min_ns", n == 0 ? 0 : min);
            m.put("mean_ns", n == 0 ? 0 : sum / n);
            m.put("p50_ns", quantile(0.50));
            m.put("p90_ns", quantile(0.90));
            m.put("p99_ns", quantile(0.99));
            m.put("p999_ns", quantile(0.999));
            m.put("max_ns", max);
            if (buckets && n > 0) {
                List<long[]> bs = new ArrayList<>();
                for (int i = 0; i < counts.length; i++) {
                    if (counts[i] != 0) {
                        bs.add(new long[] {low(i)[0], counts[i]});
                    }
                }
                m.put("buckets", bs);
            }
            return m;
        }
    }
}
