package io.tierkeeper.compat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.bookkeeper.client.BookKeeper;
import org.apache.bookkeeper.client.api.ReadHandle;
import org.apache.bookkeeper.common.util.OrderedScheduler;
import org.apache.bookkeeper.mledger.LedgerOffloader;
import org.apache.bookkeeper.mledger.LedgerOffloaderFactory;
import org.apache.bookkeeper.mledger.offload.OffloaderUtils;
import org.apache.bookkeeper.mledger.offload.Offloaders;
import org.apache.pulsar.PulsarVersion;
import org.apache.pulsar.common.policies.data.OffloadPoliciesImpl;

/**
 * Pulsar's tiered-storage offloader, loaded from the jcloud NAR exactly as a
 * broker does (OffloaderUtils.searchForOffloaders, getOffloaderFactory,
 * factory.create(OffloadPoliciesImpl.create(props), userMetadata, scheduler)).
 */
final class Offload implements AutoCloseable {
    final LedgerOffloader offloader;
    final Offloaders offloaders;
    final OrderedScheduler scheduler;
    final Map<String, Object> config = new LinkedHashMap<>();

    private Offload(LedgerOffloader o, Offloaders os, OrderedScheduler s) {
        this.offloader = o;
        this.offloaders = os;
        this.scheduler = s;
    }

    /** True when the S3 options are present. */
    static boolean wanted(Args a) {
        return a.str("s3-endpoint", null) != null || a.str("bucket", null) != null;
    }

    /**
     * Options: --s3-endpoint URL --bucket B --access-key K --secret-key S
     * [--region us-east-1] [--driver aws-s3] [--max-block-size N]
     * [--read-buffer-size N] [--offloaders-dir D] [--nar-extract-dir D]
     * [--offload-prop key=value,...] (raw broker properties, override the rest).
     */
    static Offload open(Args a) throws Exception {
        String driver = a.str("driver", "aws-s3");
        String endpoint = a.req("s3-endpoint");
        String bucket = a.req("bucket");
        String access = a.req("access-key");
        String secret = a.req("secret-key");
        String region = a.str("region", "us-east-1");
        int maxBlock = a.intv("max-block-size", 0);
        int readBuf = a.intv("read-buffer-size", 0);
        String dir = a.str("offloaders-dir", System.getProperty("tk.offloadersDir"));
        String extract = a.str("nar-extract-dir", System.getProperty("tk.narExtractDir",
                System.getProperty("java.io.tmpdir") + "/tierkeeper-nar"));
        Map<String, String> raw = a.keyValues("offload-prop");
        if (dir == null) {
            throw new Args.UsageException("missing --offloaders-dir (directory holding tiered-storage-jcloud.nar)");
        }
        Files.createDirectories(Path.of(extract));
        // With a custom endpoint, jclouds' aws-s3 provider still asks
        // https://s3.amazonaws.com/<bucket>?location for the bucket region
        // (V4 signing) unless exactly one region is configured. A broker gets
        // jclouds.* overrides from JVM system properties / environment
        // (TieredStorageConfiguration#getOverrides); do the same here.
        String regions = a.str("jclouds-regions", region);
        if (!regions.isEmpty() && System.getProperty("jclouds.regions") == null) {
            System.setProperty("jclouds.regions", regions);
        }
        Properties p = new Properties();
        p.setProperty("managedLedgerOffloadDriver", driver);
        p.setProperty("offloadersDirectory", dir);
        p.setProperty("managedLedgerOffloadBucket", bucket);
        p.setProperty("managedLedgerOffloadServiceEndpoint", endpoint);
        p.setProperty("managedLedgerOffloadRegion", region);
        // The aws-s3 driver also reads the legacy s3* names; set both.
        p.setProperty("s3ManagedLedgerOffloadBucket", bucket);
        p.setProperty("s3ManagedLedgerOffloadServiceEndpoint", endpoint);
        p.setProperty("s3ManagedLedgerOffloadRegion", region);
        // Static credentials: never fall through to the AWS default chain (EC2 metadata).
        p.setProperty("s3ManagedLedgerOffloadCredentialId", access);
        p.setProperty("s3ManagedLedgerOffloadCredentialSecret", secret);
        if (maxBlock > 0) {
            p.setProperty("managedLedgerOffloadMaxBlockSizeInBytes", Integer.toString(maxBlock));
            p.setProperty("s3ManagedLedgerOffloadMaxBlockSizeInBytes", Integer.toString(maxBlock));
        }
        if (readBuf > 0) {
            p.setProperty("managedLedgerOffloadReadBufferSizeInBytes", Integer.toString(readBuf));
            p.setProperty("s3ManagedLedgerOffloadReadBufferSizeInBytes", Integer.toString(readBuf));
        }
        raw.forEach(p::setProperty);
        long t0 = System.nanoTime();
        Offloaders offloaders = OffloaderUtils.searchForOffloaders(dir, extract);
        LedgerOffloaderFactory<?> factory = offloaders.getOffloaderFactory(driver);
        OrderedScheduler sched = OrderedScheduler.newSchedulerBuilder().numThreads(2).name("offloader").build();
        Map<String, String> userMeta = new LinkedHashMap<>();
        // What a broker passes (PulsarService#createManagedLedgerOffloader).
        userMeta.put(LedgerOffloader.METADATA_SOFTWARE_VERSION_KEY.toLowerCase(), PulsarVersion.getVersion());
        userMeta.put(LedgerOffloader.METADATA_SOFTWARE_GITSHA_KEY.toLowerCase(), PulsarVersion.getGitSha());
        userMeta.put(LedgerOffloader.METADATA_PULSAR_CLUSTER_NAME.toLowerCase(), a.str("cluster", "tierkeeper-compat"));
        LedgerOffloader off = factory.create(OffloadPoliciesImpl.create(p), userMeta, sched);
        Offload o = new Offload(off, offloaders, sched);
        o.config.put("driver", driver);
        o.config.put("driverName", off.getOffloadDriverName());
        o.config.put("driverMetadata", new TreeMap<>(off.getOffloadDriverMetadata()));
        o.config.put("factoryClass", factory.getClass().getName());
        o.config.put("offloaderClass", off.getClass().getName());
        o.config.put("userMetadata", userMeta);
        o.config.put("loadSeconds", (System.nanoTime() - t0) / 1e9);
        return o;
    }

    @Override
    public void close() {
        try {
            offloader.close();
        } catch (Exception e) {
            Tool.log("offloader close: " + e);
        }
        scheduler.shutdown();
        try {
            offloaders.close();
        } catch (Exception e) {
            Tool.log("offloaders close: " + e);
        }
    }

    static String dataKey(UUID uuid, long ledgerId) {
        return uuid + "-ledger-" + ledgerId;
    }

    // ---------------------------------------------------------------- pulsar-offload

    static Object pulsarOffload(Args a) throws Exception {
        String uri = Bk.metadataUri(a);
        long ledgerId = a.id("ledger");
        String u = a.str("uuid", null);
        String mlName = a.str("ml-name", null);
        boolean v2 = a.bool("v2");
        long timeoutSec = a.longv("timeout-seconds", 600);
        try (Offload o = open(a)) {
            a.done();
            UUID uuid = u == null ? UUID.randomUUID() : UUID.fromString(u);
            Map<String, String> extra = new LinkedHashMap<>();
            if (mlName != null) {
                extra.put("ManagedLedgerName", mlName);
            }
            try (BookKeeper bk = Bk.client(uri, v2); ReadHandle rh = Bk.openNoRecovery(bk, ledgerId)) {
                double cpu0 = Tool.processCpuSeconds();
                long t0 = System.nanoTime();
                o.offloader.offload(rh, uuid, extra).get(timeoutSec, TimeUnit.SECONDS);
                double secs = (System.nanoTime() - t0) / 1e9;
                double cpu1 = Tool.processCpuSeconds();
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("ledgerId", ledgerId);
                m.put("uuid", uuid.toString());
                m.put("uuidMsb", uuid.getMostSignificantBits());
                m.put("uuidLsb", uuid.getLeastSignificantBits());
                m.put("objects", List.of(dataKey(uuid, ledgerId), dataKey(uuid, ledgerId) + "-index"));
                m.put("extraMetadata", extra);
                m.put("lastEntryId", rh.getLastAddConfirmed());
                m.put("length", rh.getLength());
                m.put("seconds", secs);
                m.put("mbPerSec", rh.getLength() / 1e6 / secs);
                // The JVM's CPU over the offload call alone (start-up and
                // NAR loading excluded; JIT and GC threads included).
                m.put("cpuSeconds", cpu0 < 0 || cpu1 < 0 ? -1 : cpu1 - cpu0);
                m.putAll(o.config);
                return m;
            }
        }
    }

    // ---------------------------------------------------------------- pulsar-read-offloaded

    static Object pulsarReadOffloaded(Args a) throws Exception {
        long ledgerId = a.id("ledger");
        UUID uuid = UUID.fromString(a.req("uuid"));
        int batch = a.intv("batch", 100);
        Map<String, String> dm = a.keyValues("driver-metadata");
        String mlName = a.str("ml-name", null);
        int random = a.intv("random", 0);
        long seed = a.longv("seed", 1);
        try (Offload o = open(a)) {
            a.done();
            // As ManagedLedgerImpl does: the offloader's own driver metadata
            // plus what the ledger's OffloadContext recorded (--driver-metadata).
            Map<String, String> meta = new LinkedHashMap<>(o.offloader.getOffloadDriverMetadata());
            meta.putAll(dm);
            if (mlName != null) {
                meta.put("ManagedLedgerName", mlName);
            }
            if (random > 0) {
                return randomReads(o, ledgerId, uuid, meta, random, seed);
            }
            long t0 = System.nanoTime();
            try (ReadHandle rh = o.offloader.readOffloaded(ledgerId, uuid, meta).get(120, TimeUnit.SECONDS)) {
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("uuid", uuid.toString());
                m.put("openSeconds", (System.nanoTime() - t0) / 1e9);
                m.put("handleLength", rh.getLength());
                m.put("handleClosed", rh.isClosed());
                m.put("metadata", Bk.describe(rh.getLedgerMetadata()));
                m.putAll(Bk.readEntries(rh, batch));
                m.put("ledgerId", ledgerId);
                m.putAll(o.config);
                return m;
            }
        }
    }

    /**
     * --random N: N single-entry reads of random entries, each on a fresh
     * read handle (a consumer's first seek into an offloaded ledger: index
     * GET, then the data the reader fetches to find the entry).
     */
    static Object randomReads(Offload o, long ledgerId, UUID uuid, Map<String, String> meta, int n, long seed)
            throws Exception {
        java.util.Random rnd = new java.util.Random(seed);
        List<Object> seeks = new java.util.ArrayList<>();
        long lac = -1;
        long t0 = System.nanoTime();
        for (int i = 0; i < n; i++) {
            try (ReadHandle rh = o.offloader.readOffloaded(ledgerId, uuid, meta).get(120, TimeUnit.SECONDS)) {
                lac = rh.getLastAddConfirmed();
                long e = (long) (rnd.nextDouble() * (lac + 1));
                long s0 = System.nanoTime();
                try (org.apache.bookkeeper.client.api.LedgerEntries es = rh.read(e, e)) {
                    Map<String, Object> m = new LinkedHashMap<>();
                    m.put("entryId", e);
                    m.put("length", es.getEntry(e).getLength());
                    m.put("seconds", (System.nanoTime() - s0) / 1e9);
                    seeks.add(m);
                }
            }
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("uuid", uuid.toString());
        m.put("ledgerId", ledgerId);
        m.put("lastEntryId", lac);
        m.put("seeks", seeks);
        m.put("seconds", (System.nanoTime() - t0) / 1e9);
        m.putAll(o.config);
        return m;
    }
}
