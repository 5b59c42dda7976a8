package io.tierkeeper.compat;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.bookkeeper.client.BookKeeper;
import org.apache.pulsar.PulsarVersion;
import org.apache.zookeeper.Version;

/**
 * tierkeeper compat tools: BookKeeper's and Pulsar's own Java code driven from
 * the Go tests. Usage: {@code Tool <subcommand> [--option value ...]}.
 * The result is one JSON document on stdout; logs go to stderr. Exit status:
 * 0 ok, 1 failure, 2 usage error. See docs/compat.md for every option.
 */
public final class Tool {
    static final ObjectMapper JSON = new ObjectMapper();

    private static final String USAGE = String.join("\n",
            "usage: Tool <subcommand> [--option value ...]",
            "  versions",
            "  write-ledgers       --zk ADDR [--out FILE] [--entries 24] [--seed 1] [--digests CRC32,MAC,CRC32C,DUMMY]",
            "                      [--password tierkeeper-pw] [--ensemble 3 --write-quorum 2 --ack-quorum 2] [--v2]",
            "                      [--ensemble-change --pause-dir DIR] [--big-mib N [--big-entry-size 1048576]]",
            "                      [--ensembles ID,ID;ID,ID,... (one ledger per chosen ensemble)]",
            "  read-ledger-bench   --zk ADDR --ledger ID [--batch 100] [--outstanding 8] [--v3] [--batch-read] [--repeat 1] [--checksum]",
            "  read-ledger         --zk ADDR --ledger ID [--batch 100] [--v2]",
            "  ledger-metadata     --zk ADDR --ledger ID",
            "  ml-write            --zk ADDR --name T/NS/persistent/TOPIC [--entries 25] [--entries-per-ledger 10] [--cursor C]",
            "  ml-reopen           --zk ADDR --name ... [--mode open|readonly] [--no-read] [S3 options to read offloaded ledgers]",
            "  ml-offload          --zk ADDR --name ... S3 options",
            "  pulsar-offload      --zk ADDR --ledger ID [--uuid U] [--ml-name N] S3 options",
            "  pulsar-read-offloaded --ledger ID --uuid U [--driver-metadata k=v,...] [--random N [--seed S]] S3 options",
            "  produce             --service-url pulsar://H:P --topic T [--count 100] [--seed 1] [--first-index 0]",
            "                      [--size 1024 | --sizes a,b,..] [--batch] [--out FILE]",
            "  read                --service-url pulsar://H:P --topic T [--expect N] [--timeout-seconds 60] [--out FILE]",
            "  keep-producing      --service-url pulsar://H:P --topic T --out FILE [--rate 200] [--seed 1]",
            "                      [--size N | --sizes ..] [--stop-file F] [--max-seconds 600] [--batch]",
            "  create-partitioned-topic --admin-url http://H:P --topic T [--partitions 3]",
            "  journal-bench       --dir D [--journals 1] [--entry-size 4096] [--in-flight N] [--duration-ms 5000]",
            "                      [--warmup-ms 1000] [--entries N] [--max-bytes N] [--keep-files] [--journal<Setting> V ...]",
            "S3 options: --s3-endpoint URL --bucket B --access-key K --secret-key S [--region us-east-1]",
            "            [--max-block-size N] [--read-buffer-size N] [--offloaders-dir D] [--nar-extract-dir D]");

    private Tool() {}

    static void log(String msg) {
        System.err.println("[tool] " + msg);
    }

    /**
     * User+system CPU seconds this JVM has used so far, every thread (JIT
     * and GC included), from /proc/self/stat (utime and stime, in USER_HZ
     * ticks of 1/100 s); -1 when it can not be read.
     */
    static double processCpuSeconds() {
        try {
            String s = java.nio.file.Files.readString(java.nio.file.Path.of("/proc/self/stat"));
            // Fields after "(comm)": state is field 3, utime 14, stime 15.
            String[] f = s.substring(s.lastIndexOf(')') + 2).split(" ");
            return (Long.parseLong(f[11]) + Long.parseLong(f[12])) / 100.0;
        } catch (Exception e) {
            return -1;
        }
    }

    public static void main(String[] argv) {
        if (argv.length == 0 || argv[0].equals("help") || argv[0].equals("--help")) {
            System.err.println(USAGE);
            System.exit(argv.length == 0 ? 2 : 0);
        }
        int code;
        try {
            Args a = Args.parse(argv, 1);
            Object res = switch (argv[0]) {
                case "versions" -> versions(a);
                case "write-ledgers" -> Bk.writeLedgers(a);
                case "read-ledger-bench" -> Bk.readLedgerBench(a);
                case "read-ledger" -> Bk.readLedger(a);
                case "ledger-metadata" -> Bk.ledgerMetadata(a);
                case "ml-write" -> Ml.mlWrite(a);
                case "ml-reopen" -> Ml.mlReopen(a);
                case "ml-offload" -> Ml.mlOffload(a);
                case "pulsar-offload" -> Offload.pulsarOffload(a);
                case "pulsar-read-offloaded" -> Offload.pulsarReadOffloaded(a);
                case "produce" -> Client.produce(a);
                case "read" -> Client.read(a);
                case "keep-producing" -> Client.keepProducing(a);
                case "create-partitioned-topic" -> Client.createPartitionedTopic(a);
                case "journal-bench" -> JournalBench.run(a);
                default -> throw new Args.UsageException("unknown subcommand " + argv[0]);
            };
            System.out.println(JSON.writeValueAsString(res));
            System.out.flush();
            code = 0;
        } catch (Args.UsageException e) {
            System.err.println("usage error: " + e.getMessage());
            System.err.println(USAGE);
            code = 2;
        } catch (Throwable e) {
            System.err.println("error: " + e);
            e.printStackTrace(System.err);
            code = 1;
        }
        System.err.flush();
        Client.EXIT_CODE.set(code);
        Client.RESULT_PRINTED.countDown();
        // BookKeeper/Netty/ZooKeeper leave non-daemon threads behind.
        Runtime.getRuntime().halt(code);
    }

    static Object versions(Args a) {
        a.done();
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("pulsar", PulsarVersion.getVersion());
        m.put("pulsarGitSha", PulsarVersion.getGitSha());
        m.put("bookkeeper", BookKeeper.class.getPackage().getImplementationVersion());
        m.put("zookeeper", Version.getFullVersion());
        m.put("java", System.getProperty("java.version"));
        return m;
    }
}
