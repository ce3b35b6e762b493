// Echo prints its arguments, the java.version property and a library class it loads: the
// smallest check that the source launcher, the classpath and the properties reach a program.
public class Echo {
    public static void main(String[] args) throws Exception {
        System.out.println(String.join(" ", args));
        System.out.println(System.getProperty("java.version"));
        System.out.println(System.getProperty("labrun.prop", "-"));
        if (System.getenv("LABRUN_CLASS") != null) {
            System.out.println(Class.forName(System.getenv("LABRUN_CLASS")).getName());
        }
    }
}
