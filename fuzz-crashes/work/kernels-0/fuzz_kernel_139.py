import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = pto.select(pto.select(pto.select(a != (b - 1.5), a, (b - 1.5)) == (b - (a - 1.5)), pto.select(a != (b - 1.5), a, (b - 1.5)), (b - (a - 1.5))) <= ((b - (-b)) - a), pto.select(pto.select(a != (b - 1.5), a, (b - 1.5)) == (b - (a - 1.5)), pto.select(a != (b - 1.5), a, (b - 1.5)), (b - (a - 1.5))), ((b - (-b)) - a))
        t1 = (t0 * (((b + t0) + (b + a)) + pto.select(pto.select(a >= b, a, b) == (a - a), pto.select(a >= b, a, b), (a - a))))
        t2 = ((((t0 - 2.0) - (t0 * 0.25)) * t1) * (((t0 + t1) + (2.0 * b)) + a))
        acc2 = t2
        j = i % 3
        while True:
            if j >= 3:
                break
            j += 1
            acc2 = acc2 + t2
        pto.store(o + i, acc2)
