/**
 * When a certificate is renewed (k8s.io/client-go/util/certificate/certificate_manager.go
 * `nextRotationDeadline` and `jitteryDuration`): at a random point between 70 % and 90 % of its
 * validity, counted from `notBefore`, so a fleet of nodes issued together does not renew together.
 * `random` is in [0, 1) (Math.random; fixed in tests).
 */
export function nextRotationDeadline(notBefore: Date, notAfter: Date, random: number = Math.random()): Date {
  const total = notAfter.getTime() - notBefore.getTime();
  // wait.Jitter(total, 0.2) − 0.3·total = total·(0.7 + 0.2·random).
  const fraction = 0.7 + 0.2 * Math.min(Math.max(random, 0), 1);
  return new Date(notBefore.getTime() + Math.max(total, 0) * fraction);
}
