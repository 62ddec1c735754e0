; A Tapir nest in seed 004's marker form, written for hpvm's tests:
;   cilk_for (i = 0; i < n; i++) cilk_for (j = 0; j < m; j++) {
;     int v = x[i*m + j]; x[i*m + j] = v < 0 ? -v : v * a;   // a branch inside the task
;   }
declare i1 @llvm.directive.marker()

define void @nest(ptr %x, i64 %n, i64 %m, i32 %a) {
entry:
  br label %outer.detach

outer.detach:
  %i = phi i64 [ 0, %entry ], [ %i.next, %outer.inc ]
  %c = call i1 @llvm.directive.marker()["detach_task"()]
  br i1 %c, label %outer.body, label %outer.inc

outer.body:
  %row = mul i64 %i, %m
  br label %inner.detach

inner.detach:
  %j = phi i64 [ 0, %outer.body ], [ %j.next, %inner.inc ]
  %d = call i1 @llvm.directive.marker()["detach_task"()]
  br i1 %d, label %inner.body, label %inner.inc

inner.body:
  %k = add i64 %row, %j
  %p = getelementptr inbounds i32, ptr %x, i64 %k
  %v = load i32, ptr %p, align 4
  %neg = icmp slt i32 %v, 0
  br i1 %neg, label %flip, label %scale

flip:
  %w = sub nsw i32 0, %v
  br label %store

scale:
  %s = mul nsw i32 %v, %a
  br label %store

store:
  %r = phi i32 [ %w, %flip ], [ %s, %scale ]
  store i32 %r, ptr %p, align 4
  %e = call i1 @llvm.directive.marker()["reattach_task"()]
  br label %inner.inc

inner.inc:
  %j.next = add nuw nsw i64 %j, 1
  %jdone = icmp eq i64 %j.next, %m
  br i1 %jdone, label %inner.sync, label %inner.detach

inner.sync:
  %f = call i1 @llvm.directive.marker()["local_barrier"()]
  %g = call i1 @llvm.directive.marker()["reattach_task"()]
  br label %outer.inc

outer.inc:
  %i.next = add nuw nsw i64 %i, 1
  %idone = icmp eq i64 %i.next, %n
  br i1 %idone, label %outer.sync, label %outer.detach

outer.sync:
  %h = call i1 @llvm.directive.marker()["local_barrier"()]
  ret void
}
