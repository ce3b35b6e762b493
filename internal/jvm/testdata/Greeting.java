// Greeting is Greet's helper class.
public class Greeting {
    static String of(String who) {
        return "hello " + who;
    }
}
