import java.util.ArrayDeque;

/** A producer and a consumer on wait/notify. The consumer waits with a 40 ms
 *  timeout; the producer pauses 120 ms between batches, so some waits time out
 *  and others are ended by notify. */
public class ProducerConsumer {
    static final class Mailbox {
        final ArrayDeque<Integer> items = new ArrayDeque<>();
    }

    public static void main(String[] args) throws Exception {
        int batches = Integer.parseInt(args[0]);
        Mailbox box = new Mailbox();
        Thread consumer = new Thread(() -> {
            int got = 0;
            try {
                while (got < batches) {
                    synchronized (box) {
                        while (box.items.isEmpty()) {
                            box.wait(40);
                        }
                        box.items.poll();
                        got++;
                    }
                }
            } catch (InterruptedException e) {
                throw new RuntimeException(e);
            }
            System.out.println("consumed " + got);
        }, "consumer");
        Thread producer = new Thread(() -> {
            try {
                for (int i = 0; i < batches; i++) {
                    Thread.sleep(120);
                    synchronized (box) {
                        box.items.add(i);
                        box.notify();
                    }
                }
            } catch (InterruptedException e) {
                throw new RuntimeException(e);
            }
        }, "producer");
        consumer.start();
        producer.start();
        producer.join();
        consumer.join();
    }
}
