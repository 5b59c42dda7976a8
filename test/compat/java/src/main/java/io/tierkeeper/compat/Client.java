package io.tierkeeper.compat;

import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.pulsar.client.admin.PulsarAdmin;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.MessageIdAdv;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.Reader;

/**
 * Real Pulsar clients (pulsar-client-original / pulsar-client-admin-original):
 * produce, read, keep-producing, create-partitioned-topic.
 *
 * <p>Payloads are deterministic: message i of a run with seed s is
 * {@code Payloads.payload(s, i, size(i))}, with properties {@code tk-seed} and
 * {@code tk-index}, so a reader can tell which message it got and Go can
 * regenerate the bytes (testenv.Payload). Producers send unbatched by default:
 * one message = one BookKeeper entry.
 */
final class Client {
    static final String PROP_SEED = "tk-seed";
    static final String PROP_INDEX = "tk-index";
    /** Counted down by Tool.main once the result (or the error) is written. */
    static final CountDownLatch RESULT_PRINTED = new CountDownLatch(1);
    /** Tool.main's exit code, set before RESULT_PRINTED counts down. */
    static final AtomicInteger EXIT_CODE = new AtomicInteger(1);

    private Client() {}

    static PulsarClient client(Args a) throws Exception {
        String url = a.req("service-url");
        int opTimeout = a.intv("op-timeout-seconds", 30);
        return PulsarClient.builder()
                .serviceUrl(url)
                .operationTimeout(opTimeout, TimeUnit.SECONDS)
                .connectionTimeout(10, TimeUnit.SECONDS)
                .ioThreads(1)
                .listenerThreads(1)
                .build();
    }

    /** Message sizes: --size N (all the same) or --sizes a,b,c (cycled). Default 1024. */
    static int[] sizes(Args a) {
        List<String> l = a.list("sizes", null);
        int fixed = a.intv("size", -1);
        if (!l.isEmpty() && fixed >= 0) {
            throw new Args.UsageException("--size and --sizes are exclusive");
        }
        if (l.isEmpty()) {
            return new int[] {fixed >= 0 ? fixed : 1024};
        }
        int[] s = new int[l.size()];
        for (int i = 0; i < s.length; i++) {
            try {
                s[i] = Integer.parseInt(l.get(i));
            } catch (NumberFormatException e) {
                throw new Args.UsageException("--sizes: not an integer: " + l.get(i));
            }
            if (s[i] < 0) {
                throw new Args.UsageException("--sizes: negative size " + s[i]);
            }
        }
        return s;
    }

    static Producer<byte[]> producer(PulsarClient c, Args a, String topic) throws Exception {
        boolean batch = a.bool("batch");
        return c.newProducer()
                .topic(topic)
                .enableBatching(batch)
                .blockIfQueueFull(true)
                .maxPendingMessages(a.intv("max-pending", 1000))
                .sendTimeout(a.intv("send-timeout-seconds", 30), TimeUnit.SECONDS)
                .create();
    }

    /** Message id fields: ledgerId, entryId, partition, batchIndex, and the topic it came from. */
    static Map<String, Object> idFields(MessageId id, String topic) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("messageId", id.toString());
        if (id instanceof MessageIdAdv adv) {
            m.put("ledgerId", adv.getLedgerId());
            m.put("entryId", adv.getEntryId());
            m.put("partition", adv.getPartitionIndex());
            m.put("batchIndex", adv.getBatchIndex());
        }
        if (topic != null) {
            m.put("topic", topic);
        }
        return m;
    }

    /** Partition index from a message id (-1 for a non-partitioned topic). */
    static int partitionOf(MessageId id) {
        return id instanceof MessageIdAdv adv ? adv.getPartitionIndex() : -1;
    }

    /**
     * produce --service-url URL --topic T --count N [--seed 1] [--first-index 0]
     * [--size N | --sizes a,b,..] [--batch] [--out FILE]: sends N messages and
     * waits for every acknowledgement. Prints {count, messages[], sha256OfAllPayloads,
     * sha256OfSortedDigests, ledgers[]} (messages[] goes to --out instead when given).
     */
    static Object produce(Args a) throws Exception {
        String topic = a.req("topic");
        long count = a.longv("count", 100);
        long seed = a.longv("seed", 1);
        long first = a.longv("first-index", 0);
        int[] sizes = sizes(a);
        String out = a.str("out", null);
        long start = System.nanoTime();
        try (PulsarClient c = client(a); Producer<byte[]> p = producer(c, a, topic)) {
            a.done();
            List<CompletableFuture<MessageId>> futures = new ArrayList<>();
            List<byte[]> payloads = new ArrayList<>();
            for (long i = first; i < first + count; i++) {
                byte[] b = Payloads.payload(seed, i, sizes[(int) (i % sizes.length)]);
                payloads.add(b);
                futures.add(p.newMessage().value(b)
                        .property(PROP_SEED, Long.toString(seed))
                        .property(PROP_INDEX, Long.toString(i))
                        .sendAsync());
            }
            p.flush();
            Summary sum = new Summary();
            List<Map<String, Object>> msgs = new ArrayList<>();
            for (int k = 0; k < futures.size(); k++) {
                MessageId id = futures.get(k).get(120, TimeUnit.SECONDS);
                byte[] b = payloads.get(k);
                Map<String, Object> m = idFields(id, null);
                m.put("index", first + k);
                m.put("length", b.length);
                String sha = Payloads.sha256Hex(b);
                m.put("sha256", sha);
                msgs.add(m);
                sum.add(id, b, sha);
            }
            Map<String, Object> res = sum.result();
            res.put("topic", topic);
            res.put("seed", seed);
            res.put("seconds", (System.nanoTime() - start) / 1e9);
            putMessages(res, msgs, out);
            return res;
        }
    }

    static void putMessages(Map<String, Object> res, List<Map<String, Object>> msgs, String out) throws IOException {
        if (out == null) {
            res.put("messages", msgs);
            return;
        }
        Files.write(Path.of(out), Tool.JSON.writeValueAsBytes(msgs));
        res.put("out", out);
    }

    /**
     * read --service-url URL --topic T [--expect N] [--timeout-seconds 60] [--out FILE] [--summary-only]:
     * a Reader from the earliest position reads until the broker has nothing
     * more (hasMessageAvailable false) or, with --expect, until N messages
     * arrived (failing after the timeout). Prints the per-message records and
     * the summary (count, sha256OfAllPayloads in read order,
     * sha256OfSortedDigests, ledgers[] {partition, ledgerId, messages}),
     * seconds (client start to the last message) and firstMessageSeconds
     * (client start to the first). --summary-only keeps no per-message
     * records and digests (count, bytes, sha256OfAllPayloads and ledgers
     * only): a catch-up read of gigabytes at the client's own pace.
     */
    static Object read(Args a) throws Exception {
        String topic = a.req("topic");
        long expect = a.longv("expect", -1);
        int timeout = a.intv("timeout-seconds", 60);
        String out = a.str("out", null);
        boolean summaryOnly = a.bool("summary-only");
        long start = System.nanoTime();
        long first = -1;
        long deadline = start + TimeUnit.SECONDS.toNanos(timeout);
        try (PulsarClient c = client(a);
                Reader<byte[]> r = c.newReader().topic(topic).startMessageId(MessageId.earliest)
                        .readerName("tierkeeper-compat-read").create()) {
            a.done();
            Summary sum = new Summary();
            List<Map<String, Object>> msgs = new ArrayList<>();
            while (true) {
                if (expect >= 0 && sum.count >= expect) {
                    break;
                }
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("read " + sum.count + " messages of " + topic + " in " + timeout
                            + " s" + (expect >= 0 ? ", expected " + expect : "") + " (timed out)");
                }
                if (expect < 0 && !r.hasMessageAvailable()) {
                    break;
                }
                Message<byte[]> msg = r.readNext(1, TimeUnit.SECONDS);
                if (msg == null) {
                    continue;
                }
                if (first < 0) {
                    first = System.nanoTime();
                }
                byte[] b = msg.getValue();
                if (summaryOnly) {
                    sum.addSummary(msg.getMessageId(), b);
                    continue;
                }
                String sha = Payloads.sha256Hex(b);
                Map<String, Object> m = idFields(msg.getMessageId(), msg.getTopicName());
                String idx = msg.getProperty(PROP_INDEX);
                m.put("index", idx == null ? -1 : Long.parseLong(idx));
                String seed = msg.getProperty(PROP_SEED);
                if (seed != null) {
                    m.put("seed", Long.parseLong(seed));
                }
                m.put("length", b.length);
                m.put("sha256", sha);
                msgs.add(m);
                sum.add(msg.getMessageId(), b, sha);
            }
            Map<String, Object> res = sum.result();
            res.put("topic", topic);
            res.put("seconds", (System.nanoTime() - start) / 1e9);
            res.put("firstMessageSeconds", first < 0 ? -1 : (first - start) / 1e9);
            putMessages(res, msgs, out);
            return res;
        }
    }

    /** Counts, digests and the ledgers messages came from. */
    static final class Summary {
        long count;
        long bytes;
        final MessageDigest all = Payloads.sha256();
        final List<String> digests = new ArrayList<>();
        // partition -> ledger -> messages
        final TreeMap<Integer, TreeMap<Long, Long>> ledgers = new TreeMap<>();

        void add(MessageId id, byte[] b, String sha) {
            digests.add(sha);
            addSummary(id, b);
        }

        /** Counts b without its own digest (read --summary-only). */
        void addSummary(MessageId id, byte[] b) {
            count++;
            bytes += b.length;
            all.update(b);
            if (id instanceof MessageIdAdv adv) {
                ledgers.computeIfAbsent(adv.getPartitionIndex(), k -> new TreeMap<>())
                        .merge(adv.getLedgerId(), 1L, Long::sum);
            }
        }

        Map<String, Object> result() {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("count", count);
            m.put("bytes", bytes);
            m.put("sha256OfAllPayloads", HexFormat.of().formatHex(all.digest()));
            m.put("sha256OfSortedDigests", sortedDigest(digests));
            List<Map<String, Object>> l = new ArrayList<>();
            ledgers.forEach((part, byLedger) -> byLedger.forEach((ledger, n) -> {
                Map<String, Object> e = new LinkedHashMap<>();
                e.put("partition", part);
                e.put("ledgerId", ledger);
                e.put("messages", n);
                l.add(e);
            }));
            m.put("ledgers", l);
            return m;
        }
    }

    /** SHA-256 of the sorted hex digests, one per line: an order-independent digest of a message set. */
    static String sortedDigest(List<String> digests) {
        List<String> s = new ArrayList<>(digests);
        s.sort(null);
        MessageDigest d = Payloads.sha256();
        for (String x : s) {
            d.update(x.getBytes(StandardCharsets.US_ASCII));
            d.update((byte) '\n');
        }
        return HexFormat.of().formatHex(d.digest());
    }

    /**
     * keep-producing --service-url URL --topic T --out FILE [--rate 200] [--seed 1]
     * [--size N | --sizes ..] [--stop-file F] [--max-seconds 600] [--batch]:
     * sends at about --rate messages/s until SIGTERM, the stop file exists or
     * --max-seconds pass, then waits for outstanding sends. Every acknowledged
     * message is appended to --out as one JSON line (flushed as it is acked),
     * with dueMs/sendMs/ackMs: when it was due by the rate, handed to the client
     * and acknowledged, in ms since the start (publish latency = ackMs - dueMs);
     * failed sends are counted. Prints {sent, acked, failed, firstError, seconds, out}.
     */
    static Object keepProducing(Args a) throws Exception {
        String topic = a.req("topic");
        String out = a.req("out");
        double rate = Double.parseDouble(a.str("rate", "200"));
        long seed = a.longv("seed", 1);
        int[] sizes = sizes(a);
        String stopFile = a.str("stop-file", null);
        long maxSeconds = a.longv("max-seconds", 600);
        if (rate <= 0) {
            throw new Args.UsageException("--rate must be positive");
        }
        AtomicBoolean stop = new AtomicBoolean();
        // On SIGTERM the hook stops the loop and holds the JVM until Tool.main
        // has printed the result (RESULT_PRINTED), at most 90 s, then halts
        // with main's exit code: returning would let the JVM's own exit
        // (143) race Tool.main's halt(0).
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            stop.set(true);
            try {
                if (RESULT_PRINTED.await(90, TimeUnit.SECONDS)) {
                    Runtime.getRuntime().halt(EXIT_CODE.get());
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "tk-stop"));
        long start = System.nanoTime();
        AtomicLong acked = new AtomicLong();
        AtomicLong failed = new AtomicLong();
        String[] firstError = new String[1];
        Semaphore inFlight = new Semaphore(500);
        long sent = 0;
        try (PulsarClient c = client(a); Producer<byte[]> p = producer(c, a, topic);
                BufferedWriter w = Files.newBufferedWriter(Path.of(out), StandardCharsets.UTF_8)) {
            a.done();
            Tool.log("keep-producing to " + topic + " at " + rate + " msg/s");
            long periodNanos = (long) (1e9 / rate);
            long next = System.nanoTime();
            long end = start + TimeUnit.SECONDS.toNanos(maxSeconds);
            long lastStopCheck = 0;
            while (!stop.get() && System.nanoTime() < end) {
                long now = System.nanoTime();
                if (stopFile != null && now - lastStopCheck > 50_000_000L) {
                    lastStopCheck = now;
                    if (Files.exists(Path.of(stopFile))) {
                        break;
                    }
                }
                if (now < next) {
                    long ms = Math.min(50, (next - now) / 1_000_000L);
                    if (ms > 0) {
                        Thread.sleep(ms);
                    } else {
                        Thread.onSpinWait();
                    }
                    continue;
                }
                long due = next;
                next += periodNanos;
                long i = sent++;
                byte[] b = Payloads.payload(seed, i, sizes[(int) (i % sizes.length)]);
                String sha = Payloads.sha256Hex(b);
                inFlight.acquire();
                long sentAt = System.nanoTime();
                p.newMessage().value(b)
                        .property(PROP_SEED, Long.toString(seed))
                        .property(PROP_INDEX, Long.toString(i))
                        .sendAsync()
                        .whenComplete((id, err) -> {
                            long ackAt = System.nanoTime();
                            try {
                                if (err != null) {
                                    failed.incrementAndGet();
                                    synchronized (firstError) {
                                        if (firstError[0] == null) {
                                            firstError[0] = err.toString();
                                        }
                                    }
                                    return;
                                }
                                Map<String, Object> m = idFields(id, null);
                                m.put("index", i);
                                m.put("length", b.length);
                                m.put("sha256", sha);
                                // Milliseconds since the start: when the message was due
                                // (the rate's schedule), handed to the client, acknowledged.
                                m.put("dueMs", (due - start) / 1e6);
                                m.put("sendMs", (sentAt - start) / 1e6);
                                m.put("ackMs", (ackAt - start) / 1e6);
                                String line = Tool.JSON.writeValueAsString(m);
                                synchronized (w) {
                                    w.write(line);
                                    w.newLine();
                                    w.flush();
                                }
                                acked.incrementAndGet();
                            } catch (IOException e) {
                                failed.incrementAndGet();
                            } finally {
                                inFlight.release();
                            }
                        });
            }
            // Wait for every outstanding send to be acknowledged or fail.
            if (!inFlight.tryAcquire(500, 60, TimeUnit.SECONDS)) {
                Tool.log("keep-producing: sends still outstanding after 60 s");
            }
            Map<String, Object> res = new LinkedHashMap<>();
            res.put("topic", topic);
            res.put("seed", seed);
            res.put("sent", sent);
            res.put("acked", acked.get());
            res.put("failed", failed.get());
            res.put("firstError", firstError[0]);
            res.put("seconds", (System.nanoTime() - start) / 1e9);
            res.put("out", out);
            return res;
        }
    }

    /**
     * create-partitioned-topic --admin-url URL --topic T --partitions N: Pulsar's
     * admin client creates the partitioned topic (and its partitions). Prints
     * {topic, partitions} as the broker reports them back.
     */
    static Object createPartitionedTopic(Args a) throws Exception {
        String url = a.req("admin-url");
        String topic = a.req("topic");
        int n = a.intv("partitions", 3);
        a.done();
        try (PulsarAdmin admin = PulsarAdmin.builder().serviceHttpUrl(url)
                .connectionTimeout(10, TimeUnit.SECONDS).readTimeout(30, TimeUnit.SECONDS).build()) {
            admin.topics().createPartitionedTopic(topic, n);
            Map<String, Object> res = new LinkedHashMap<>();
            res.put("topic", topic);
            res.put("partitions", admin.topics().getPartitionedTopicMetadata(topic).partitions);
            return res;
        }
    }
}
