// The Java client side of test/e2e/fabric8-watch.test.ts: watches the pods of one namespace of a
// nodelet with fabric8 kubernetes-client, through a plain watch or a shared informer, on one of
// its HTTP back-ends, and prints each event as one JSON line for the test to read.
//
//   java -cp "$(scripts/jvm-client.sh lib)/*" test/jvm-client/FabricWatch.java \
//     --master URL --namespace NS --http-client vertx|jdk --mode watch|informer
//   java -cp "$(scripts/jvm-client.sh lib vertx5)/*" test/jvm-client/FabricWatch.java \
//     --master URL --namespace NS --http-client default|vertx5 --mode watch|informer
//
// --http-client names the HttpClient.Factory: vertx (Vert.x 4), jdk, vertx5 (Vert.x 5); or
// default: none set, so fabric8 picks one the way it does for a user who sets none (ServiceLoader).
// Each back-end's classes are only on the class path that holds them: the factory is loaded by
// name, so this file compiles on either.
//
// stdout, one JSON object a line:
//   {"ready":"watch"|"informer","httpClient":CLASS}
//                                   once the watch is open / the informer has synced; CLASS is the
//                                   class of the HttpClient the client built (client.getHttpClient())
//   {"source":"watch"|"informer","type":"ADDED"|"MODIFIED"|"DELETED","name":NAME,"restartCount":N}
//                                   per event; N is the sum of the pod's containers' restart counts
//   {"error":"..."}                 the watch closed with an error, or the informer failed
// It exits 0 when its stdin reaches EOF (the test's way of stopping it), closing the client.
// Launched as a single-file source program (Java 11+): no compile step.

import io.fabric8.kubernetes.api.model.ContainerStatus;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.Watcher;
import io.fabric8.kubernetes.client.WatcherException;
import io.fabric8.kubernetes.client.http.HttpClient;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

public class FabricWatch {
  public static void main(String[] argv) {
    try {
      run(argv);
    } catch (Exception e) {
      print("{\"error\":" + quote(e.toString()) + "}");
      e.printStackTrace();
      System.exit(1);
    }
    System.exit(0); // the back-ends' non-daemon threads would keep a JVM alive
  }

  static void run(String[] argv) throws Exception {
    // Before the first logger exists: slf4j-simple logs to stderr, warnings and worse only.
    System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
    Map<String, String> args = new HashMap<>();
    for (int i = 0; i + 1 < argv.length; i += 2) args.put(argv[i], argv[i + 1]);
    String master = required(args, "--master");
    String namespace = required(args, "--namespace");
    String factoryClass = switch (required(args, "--http-client")) {
      case "vertx" -> "io.fabric8.kubernetes.client.vertx.VertxHttpClientFactory";
      case "jdk" -> "io.fabric8.kubernetes.client.jdkhttp.JdkHttpClientFactory";
      case "vertx5" -> "io.fabric8.kubernetes.client.vertx5.Vertx5HttpClientFactory";
      case "default" -> null;
      default -> throw new IllegalArgumentException("--http-client must be vertx, jdk, vertx5 or default");
    };
    String mode = required(args, "--mode");

    KubernetesClientBuilder builder = new KubernetesClientBuilder()
        .withConfig(new ConfigBuilder().withMasterUrl(master).withNamespace(namespace).withTrustCerts(true).build());
    if (factoryClass != null) {
      builder.withHttpClientFactory((HttpClient.Factory) Class.forName(factoryClass).getDeclaredConstructor().newInstance());
    }
    try (KubernetesClient client = builder.build()) {
      String httpClient = client.getHttpClient().getClass().getName();
      AutoCloseable subscription = switch (mode) {
        case "watch" -> watch(client, namespace, httpClient);
        case "informer" -> inform(client, namespace, httpClient);
        default -> throw new IllegalArgumentException("--mode must be watch or informer");
      };
      try (subscription) {
        System.in.transferTo(java.io.OutputStream.nullOutputStream()); // until EOF
      }
    }
  }

  static AutoCloseable watch(KubernetesClient client, String namespace, String httpClient) {
    var watch = client.pods().inNamespace(namespace).watch(new Watcher<Pod>() {
      @Override
      public void eventReceived(Action action, Pod pod) {
        event("watch", action.name(), pod);
      }

      @Override
      public void onClose(WatcherException e) {
        print("{\"error\":" + quote("watch closed: " + e) + "}");
      }
    });
    print("{\"ready\":\"watch\",\"httpClient\":" + quote(httpClient) + "}");
    return watch;
  }

  static AutoCloseable inform(KubernetesClient client, String namespace, String httpClient) throws Exception {
    SharedIndexInformer<Pod> informer = client.pods().inNamespace(namespace).runnableInformer(0);
    informer.exceptionHandler((started, t) -> {
      print("{\"error\":" + quote("informer: " + t) + "}");
      return true; // keep retrying, as an informer does by default
    });
    informer.addEventHandler(new ResourceEventHandler<Pod>() {
      @Override
      public void onAdd(Pod pod) {
        event("informer", "ADDED", pod);
      }

      @Override
      public void onUpdate(Pod before, Pod pod) {
        event("informer", "MODIFIED", pod);
      }

      @Override
      public void onDelete(Pod pod, boolean finalStateUnknown) {
        event("informer", "DELETED", pod);
      }
    });
    informer.start().toCompletableFuture().get(60, TimeUnit.SECONDS);
    if (!informer.hasSynced()) throw new IllegalStateException("informer started but has not synced");
    print("{\"ready\":\"informer\",\"httpClient\":" + quote(httpClient) + "}");
    return informer;
  }

  static void event(String source, String type, Pod pod) {
    List<ContainerStatus> statuses = pod.getStatus() == null ? null : pod.getStatus().getContainerStatuses();
    int restarts = 0;
    if (statuses != null) {
      for (ContainerStatus s : statuses) restarts += s.getRestartCount() == null ? 0 : s.getRestartCount();
    }
    print("{\"source\":\"" + source + "\",\"type\":\"" + type + "\",\"name\":" + quote(pod.getMetadata().getName())
        + ",\"restartCount\":" + restarts + "}");
  }

  /** One line at a time, whole: the watch and informer threads print concurrently. */
  static synchronized void print(String line) {
    System.out.println(line);
    System.out.flush();
  }

  /** A JSON string literal. */
  static String quote(String s) {
    StringBuilder b = new StringBuilder("\"");
    for (char c : String.valueOf(s).toCharArray()) {
      switch (c) {
        case '"' -> b.append("\\\"");
        case '\\' -> b.append("\\\\");
        case '\n' -> b.append("\\n");
        case '\r' -> b.append("\\r");
        case '\t' -> b.append("\\t");
        default -> {
          if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
          else b.append(c);
        }
      }
    }
    return b.append('"').toString();
  }

  static String required(Map<String, String> args, String name) {
    String v = args.get(name);
    if (v == null) throw new IllegalArgumentException("missing " + name + " (usage: --master URL --namespace NS --http-client vertx|jdk|vertx5|default --mode watch|informer)");
    return v;
  }
}
