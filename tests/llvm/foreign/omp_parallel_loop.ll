; An OpenMP parallel loop in Intel's directive form (clang's -fiopenmp style at -O0: a
; normalized index from 0 to .omp.ub, :TYPED clause modifiers, an END directive on the
; exit), written for hpvm's tests:
;
;   void twice(int *a, int n) {
;     #pragma omp parallel for
;     for (int i = 0; i < n; i++)
;       a[i] = 2 * a[i] + (a[i] < 0 ? 1 : 0);
;   }

define void @twice(ptr %a, i32 %n) {
entry:
  %a.addr = alloca ptr, align 8
  %n.addr = alloca i32, align 4
  %.omp.iv = alloca i32, align 4
  %.omp.lb = alloca i32, align 4
  %.omp.ub = alloca i32, align 4
  %i = alloca i32, align 4
  store ptr %a, ptr %a.addr, align 8
  store i32 %n, ptr %n.addr, align 4
  store i32 0, ptr %.omp.lb, align 4
  %sub = sub nsw i32 %n, 1
  store i32 %sub, ptr %.omp.ub, align 4
  %0 = call token @llvm.directive.region.entry() [ "DIR.OMP.PARALLEL.LOOP"(), "QUAL.OMP.SHARED:TYPED"(ptr %a.addr, ptr null, i32 1), "QUAL.OMP.NORMALIZED.IV:TYPED"(ptr %.omp.iv, i32 0), "QUAL.OMP.FIRSTPRIVATE:TYPED"(ptr %.omp.lb, i32 0, i32 1), "QUAL.OMP.NORMALIZED.UB:TYPED"(ptr %.omp.ub, i32 0), "QUAL.OMP.PRIVATE:TYPED"(ptr %i, i32 0, i32 1) ]
  %1 = load i32, ptr %.omp.lb, align 4
  store i32 %1, ptr %.omp.iv, align 4
  br label %omp.inner.for.cond

omp.inner.for.cond:
  %2 = load i32, ptr %.omp.iv, align 4
  %3 = load i32, ptr %.omp.ub, align 4
  %cmp = icmp sle i32 %2, %3
  br i1 %cmp, label %omp.inner.for.body, label %omp.inner.for.end

omp.inner.for.body:
  %4 = load i32, ptr %.omp.iv, align 4
  %mul = mul nsw i32 %4, 1
  %add = add nsw i32 0, %mul
  store i32 %add, ptr %i, align 4
  %5 = load ptr, ptr %a.addr, align 8
  %6 = load i32, ptr %i, align 4
  %idxprom = sext i32 %6 to i64
  %arrayidx = getelementptr inbounds i32, ptr %5, i64 %idxprom
  %7 = load i32, ptr %arrayidx, align 4
  %neg = icmp slt i32 %7, 0
  br i1 %neg, label %cond.true, label %cond.end

cond.true:
  br label %cond.end

cond.end:
  %cond = phi i32 [ 1, %cond.true ], [ 0, %omp.inner.for.body ]
  %mul1 = mul nsw i32 2, %7
  %add2 = add nsw i32 %mul1, %cond
  store i32 %add2, ptr %arrayidx, align 4
  br label %omp.inner.for.inc

omp.inner.for.inc:
  %8 = load i32, ptr %.omp.iv, align 4
  %add3 = add nsw i32 %8, 1
  store i32 %add3, ptr %.omp.iv, align 4
  br label %omp.inner.for.cond

omp.inner.for.end:
  br label %omp.loop.exit

omp.loop.exit:
  call void @llvm.directive.region.exit(token %0) [ "DIR.OMP.END.PARALLEL.LOOP"() ]
  ret void
}

declare token @llvm.directive.region.entry()
declare void @llvm.directive.region.exit(token)
